// Diagnostics.h — the diagnostic registry and the engine that reports diagnostics.
//
// Every diagnostic is declared once in Diagnostics.def with a stable id, a severity and
// a message format. Phases report through DiagnosticEngine, which formats the message,
// applies -Werror, counts errors and hands the result to a consumer: clang-style text
// through llvm::SourceMgr, a JSON document for tools, or the -verify checker.
#pragma once

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/SMLoc.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace fsl {

enum class DiagId {
#define DIAGNOSTIC(Kind, Severity, Id, Format) Kind,
#include "support/Diagnostics.def"
};

enum class Severity { Error, Warning, Note };

struct DiagInfo {
  Severity severity;
  const char *id;
  const char *format;
};

/// The registry entry of one diagnostic.
const DiagInfo &diagInfo(DiagId kind);

/// All registry entries, in declaration order (for docs and tests).
llvm::ArrayRef<DiagInfo> allDiagnostics();

llvm::StringRef severityName(Severity severity);

/// A note attached to a diagnostic.
struct DiagNote {
  DiagId kind;
  llvm::SMRange range; // may be invalid: then the note has no location
  std::string message;
};

/// One formatted diagnostic, ready for a consumer.
struct Diagnostic {
  DiagId kind;
  Severity severity;   // after -Werror
  llvm::SMRange range; // invalid for diagnostics that concern no source text
  std::string message;
  std::vector<DiagNote> notes;
};

/// Receives finished diagnostics.
class DiagnosticConsumer {
public:
  virtual ~DiagnosticConsumer() = default;
  virtual void handle(const Diagnostic &diagnostic) = 0;
  /// Called once when the driver is done (JSON prints its document here).
  virtual void finish() {}
};

class DiagnosticEngine;

/// Collects notes, then reports the diagnostic when it goes out of scope.
class DiagnosticBuilder {
public:
  DiagnosticBuilder(DiagnosticEngine &engine, Diagnostic diagnostic)
      : engine_(&engine), diagnostic_(std::move(diagnostic)) {}
  DiagnosticBuilder(DiagnosticBuilder &&other) noexcept
      : engine_(other.engine_), diagnostic_(std::move(other.diagnostic_)) {
    other.engine_ = nullptr;
  }
  DiagnosticBuilder(const DiagnosticBuilder &) = delete;
  DiagnosticBuilder &operator=(const DiagnosticBuilder &) = delete;
  DiagnosticBuilder &operator=(DiagnosticBuilder &&) = delete;
  ~DiagnosticBuilder();

  template <typename... Args>
  DiagnosticBuilder &note(DiagId kind, llvm::SMRange range, Args &&...args) {
    diagnostic_.notes.push_back(
        {kind, range, llvm::formatv(diagInfo(kind).format, std::forward<Args>(args)...).str()});
    return *this;
  }

private:
  DiagnosticEngine *engine_;
  Diagnostic diagnostic_;
};

class DiagnosticEngine {
public:
  /// The engine reports to `consumer`; it does not own it.
  explicit DiagnosticEngine(DiagnosticConsumer &consumer) : consumer_(&consumer) {}

  void setWarningsAsErrors(bool value) { warningsAsErrors_ = value; }
  /// After this many errors, one `too-many-errors` error is reported and the rest dropped.
  void setErrorLimit(unsigned limit) { errorLimit_ = limit; }
  void setConsumer(DiagnosticConsumer &consumer) { consumer_ = &consumer; }

  template <typename... Args>
  DiagnosticBuilder report(DiagId kind, llvm::SMRange range, Args &&...args) {
    const DiagInfo &info = diagInfo(kind);
    return DiagnosticBuilder(
        *this, Diagnostic{kind,
                          info.severity,
                          range,
                          llvm::formatv(info.format, std::forward<Args>(args)...).str(),
                          {}});
  }
  template <typename... Args>
  DiagnosticBuilder report(DiagId kind, llvm::SMLoc loc, Args &&...args) {
    return report(kind, llvm::SMRange(loc, loc), std::forward<Args>(args)...);
  }

  unsigned errorCount() const { return errorCount_; }
  unsigned warningCount() const { return warningCount_; }
  bool hasErrors() const { return errorCount_ != 0; }
  /// True once the error limit was reached: callers may stop early.
  bool limitReached() const { return limitReached_; }

  void finish() { consumer_->finish(); }

private:
  friend class DiagnosticBuilder;
  void emit(Diagnostic diagnostic);

  DiagnosticConsumer *consumer_;
  bool warningsAsErrors_ = false;
  unsigned errorLimit_ = 0; // 0: no limit
  unsigned errorCount_ = 0;
  unsigned warningCount_ = 0;
  bool limitReached_ = false;
  unsigned shownErrors_ = 0; // errors handed to the consumer (the error limit counts these)
  /// Each diagnostic shown at a source range (its kind, message, range and notes), so that
  /// the same one (the lowering's refusal of each `when` variant of a fusion, say) is
  /// shown once.
  std::set<std::string> reported_;
};

/// Prints clang-style text: `file:line:col: error: message [id]`, the line and a caret.
class TextDiagnosticPrinter : public DiagnosticConsumer {
public:
  TextDiagnosticPrinter(llvm::SourceMgr &sources, llvm::raw_ostream &out, bool colors)
      : sources_(sources), out_(out), colors_(colors) {}
  void handle(const Diagnostic &diagnostic) override;

private:
  void print(DiagId kind, Severity severity, llvm::SMRange range, llvm::StringRef message);
  llvm::SourceMgr &sources_;
  llvm::raw_ostream &out_;
  bool colors_;
};

/// Collects diagnostics and prints one JSON document (see docs/diagnostics.md).
class JsonDiagnosticPrinter : public DiagnosticConsumer {
public:
  JsonDiagnosticPrinter(llvm::SourceMgr &sources, llvm::raw_ostream &out)
      : sources_(sources), out_(out) {}
  void handle(const Diagnostic &diagnostic) override { diagnostics_.push_back(diagnostic); }
  void finish() override;

private:
  llvm::SourceMgr &sources_;
  llvm::raw_ostream &out_;
  std::vector<Diagnostic> diagnostics_;
};

/// Keeps diagnostics in memory (unit tests, -verify).
class CollectingDiagnosticConsumer : public DiagnosticConsumer {
public:
  void handle(const Diagnostic &diagnostic) override { diagnostics.push_back(diagnostic); }
  std::vector<Diagnostic> diagnostics;
};

/// `message [id]`: the text -verify expectations are matched against.
std::string messageWithId(const Diagnostic &diagnostic);

} // namespace fsl
