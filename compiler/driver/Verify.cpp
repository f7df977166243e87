// Verify.cpp — parsing `expected-*` comments and matching them with diagnostics.
#include "driver/Verify.h"

#include <llvm/Support/SourceMgr.h>

namespace fsl {
namespace {

/// The line of `at` in buffer `bufferId`, from the buffer's cached line table.
/// SourceMgr::FindLineNumber also finds the column, scanning back to the line's start:
/// quadratic for many diagnostics on one long line.
unsigned lineOf(const llvm::SourceMgr &sources, unsigned bufferId, const char *at) {
  return sources.getBufferInfo(bufferId).getLineNumber(at);
}

/// Where a diagnostic or note is, as a line of buffer `bufferId`; 0 if elsewhere.
unsigned lineIn(const llvm::SourceMgr &sources, unsigned bufferId, llvm::SMRange range) {
  if (!range.Start.isValid() || sources.FindBufferContainingLoc(range.Start) != bufferId)
    return 0;
  return lineOf(sources, bufferId, range.Start.getPointer());
}

llvm::StringRef severityWord(Severity severity) { return severityName(severity); }

} // namespace

ExpectationList parseExpectations(const llvm::SourceMgr &sources, unsigned bufferId,
                                  DiagnosticEngine &report) {
  ExpectationList list;
  llvm::StringRef text = sources.getMemoryBuffer(bufferId)->getBuffer();
  const char *base = text.data();
  size_t position = 0;
  // The start of the line of `position`, found moving forward only: searching back from
  // each expectation would be quadratic with many of them on one long line.
  size_t scanned = 0, lineStart = 0;
  static constexpr llvm::StringLiteral kPrefix = "expected-";
  while ((position = text.find(kPrefix, position)) != llvm::StringRef::npos) {
    const char *start = base + position;
    for (; scanned < position; ++scanned)
      if (text[scanned] == '\n')
        lineStart = scanned + 1;
    llvm::StringRef rest = text.substr(position + kPrefix.size());
    position += kPrefix.size();
    // Only inside a `//` comment on this line.
    llvm::StringRef lineBefore = text.slice(lineStart, start - base);
    if (!lineBefore.contains("//"))
      continue;
    auto where = [&](const char *end) {
      return llvm::SMRange(llvm::SMLoc::getFromPointer(start), llvm::SMLoc::getFromPointer(end));
    };
    if (rest.consume_front("no-diagnostics")) {
      list.expectsNoDiagnostics = true;
      continue;
    }
    Severity severity;
    if (rest.consume_front("error"))
      severity = Severity::Error;
    else if (rest.consume_front("warning"))
      severity = Severity::Warning;
    else if (rest.consume_front("note"))
      severity = Severity::Note;
    else
      continue; // some other word that starts with "expected-"
    unsigned line = lineOf(sources, bufferId, start);
    if (rest.consume_front("@")) {
      bool relative = rest.starts_with("+") || rest.starts_with("-");
      bool minus = rest.consume_front("-");
      if (!minus)
        rest.consume_front("+");
      unsigned amount;
      if (rest.consumeInteger(10, amount)) {
        report.report(DiagId::VerifyBadDirective, where(rest.data()),
                      "expected a line number or +N/-N after '@'");
        continue;
      }
      if (!relative)
        line = amount;
      else if (minus && amount >= line) {
        report.report(DiagId::VerifyBadDirective, where(rest.data()),
                      "line offset before the first line");
        continue;
      } else
        line = minus ? line - amount : line + amount;
    }
    rest = rest.ltrim(" \t");
    unsigned count = 1;
    if (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest.front())))
      rest.consumeInteger(10, count);
    rest = rest.ltrim(" \t");
    if (!rest.consume_front("{{")) {
      report.report(DiagId::VerifyBadDirective, where(rest.data()),
                    "expected '{{' after the expectation");
      continue;
    }
    size_t close = rest.find("}}");
    size_t newline = rest.find('\n');
    if (close == llvm::StringRef::npos || (newline != llvm::StringRef::npos && newline < close)) {
      report.report(DiagId::VerifyBadDirective, where(rest.data()), "missing '}}' on this line");
      continue;
    }
    Expectation expectation{severity, line, count, rest.substr(0, close).str(),
                            where(rest.data() + close + 2)};
    list.expectations.push_back(std::move(expectation));
  }
  return list;
}

bool verifyDiagnostics(const llvm::SourceMgr &sources, unsigned bufferId,
                       const std::vector<Diagnostic> &produced, DiagnosticEngine &report) {
  unsigned errorsBefore = report.errorCount();
  ExpectationList list = parseExpectations(sources, bufferId, report);
  if (list.expectations.empty() && !list.expectsNoDiagnostics &&
      report.errorCount() == errorsBefore)
    report.report(DiagId::VerifyNoExpectations,
                  llvm::SMLoc::getFromPointer(sources.getMemoryBuffer(bufferId)->getBufferStart()));

  auto match = [&](Severity severity, unsigned line, const std::string &text, llvm::SMRange range) {
    for (Expectation &expectation : list.expectations) {
      if (expectation.severity == severity && expectation.line == line &&
          expectation.seen < expectation.count &&
          llvm::StringRef(text).contains(expectation.text)) {
        ++expectation.seen;
        return;
      }
    }
    report.report(DiagId::VerifyUnexpected, range, severityWord(severity), text);
  };

  for (const Diagnostic &diagnostic : produced) {
    unsigned line = lineIn(sources, bufferId, diagnostic.range);
    match(diagnostic.severity, line, messageWithId(diagnostic), diagnostic.range);
    for (const DiagNote &note : diagnostic.notes) {
      // Notes without a place (such as -Werror's) or in another file (an imported
      // declaration) cannot be expected from this file's comments.
      if (!note.range.Start.isValid() || lineIn(sources, bufferId, note.range) == 0)
        continue;
      Diagnostic asDiagnostic{note.kind, Severity::Note, note.range, note.message, {}};
      match(Severity::Note, lineIn(sources, bufferId, note.range), messageWithId(asDiagnostic),
            note.range);
    }
  }
  for (const Expectation &expectation : list.expectations)
    if (expectation.seen < expectation.count)
      report.report(
          DiagId::VerifyNotSeen, expectation.range, severityWord(expectation.severity),
          llvm::formatv(
              "'{0}' on line {1}{2}", expectation.text, expectation.line,
              expectation.count > 1
                  ? llvm::formatv(" ({0} of {1} seen)", expectation.seen, expectation.count).str()
                  : std::string())
              .str());
  return report.errorCount() == errorsBefore;
}

} // namespace fsl
