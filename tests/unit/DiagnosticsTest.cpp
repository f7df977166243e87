// DiagnosticsTest.cpp — the registry, -Werror, the error limit and both printers.
#include "TestSupport.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <doctest/doctest.h>

#include <regex>
#include <set>

using namespace fsl;

TEST_CASE("registry ids are unique, kebab-case, and formats are non-empty") {
  std::set<std::string> seen;
  std::regex kebab("[a-z0-9]+(-[a-z0-9]+)*");
  for (const DiagInfo &info : allDiagnostics()) {
    CHECK_MESSAGE(seen.insert(info.id).second, "duplicate id ", info.id);
    CHECK_MESSAGE(std::regex_match(info.id, kebab), "id not kebab-case: ", info.id);
    CHECK(std::string(info.format).size() > 0);
  }
  CHECK(seen.size() == allDiagnostics().size());
}

TEST_CASE("-Werror turns warnings into errors with a note") {
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine engine(collected);
  engine.report(DiagId::MissingIncludeDir, llvm::SMRange(), "lib");
  CHECK(engine.errorCount() == 0);
  CHECK(engine.warningCount() == 1);
  engine.setWarningsAsErrors(true);
  engine.report(DiagId::MissingIncludeDir, llvm::SMRange(), "lib");
  CHECK(engine.errorCount() == 1);
  REQUIRE(collected.diagnostics.size() == 2);
  CHECK(collected.diagnostics[1].severity == Severity::Error);
  REQUIRE(collected.diagnostics[1].notes.size() == 1);
  CHECK(collected.diagnostics[1].notes[0].kind == DiagId::NoteWarningAsError);
}

TEST_CASE("after the error limit one too-many-errors is reported, then nothing") {
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine engine(collected);
  engine.setErrorLimit(2);
  for (int i = 0; i < 5; ++i)
    engine.report(DiagId::UsageError, llvm::SMRange(), "bad");
  REQUIRE(collected.diagnostics.size() == 3);
  CHECK(collected.diagnostics[2].kind == DiagId::TooManyErrors);
  CHECK(collected.diagnostics[2].message == "too many errors (2); stopping");
  CHECK(engine.limitReached());
}

TEST_CASE("the same diagnostic at the same source range is shown once and counted") {
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine engine(collected);
  const char text[] = "fusion f(x: f32[N]) -> (y: f32[N]) { y = z; }";
  auto range = [&](int from, int to) {
    return llvm::SMRange(llvm::SMLoc::getFromPointer(text + from),
                         llvm::SMLoc::getFromPointer(text + to));
  };
  engine.report(DiagId::UnknownName, range(41, 42), "z");
  engine.report(DiagId::UnknownName, range(41, 42), "z"); // a second variant's same refusal
  engine.report(DiagId::UnknownName, range(41, 42), "w"); // another message: shown
  engine.report(DiagId::UsageError, llvm::SMRange(), "no source");
  engine.report(DiagId::UsageError, llvm::SMRange(), "no source"); // no range: each one
  // The same message and note text, the note elsewhere: another diagnostic (a third
  // overlapping `when` schedule against a second one).
  engine.report(DiagId::UnknownName, range(41, 42), "z")
      .note(DiagId::NoteDirective, range(0, 6), "here");
  engine.report(DiagId::UnknownName, range(41, 42), "z")
      .note(DiagId::NoteDirective, range(7, 8), "here");
  engine.report(DiagId::UnknownName, range(41, 42), "z")
      .note(DiagId::NoteDirective, range(7, 8), "here");
  REQUIRE(collected.diagnostics.size() == 6);
  CHECK(collected.diagnostics[1].message == "unknown name 'w'");
  CHECK(collected.diagnostics[5].notes.at(0).range.Start.getPointer() == text + 7);
  // Repeats count: a phase that reports one again still sees that it failed.
  CHECK(engine.errorCount() == 8);
}

TEST_CASE("repeats do not count toward the error limit") {
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine engine(collected);
  engine.setErrorLimit(2);
  const char text[] = "y = z;";
  llvm::SMRange at(llvm::SMLoc::getFromPointer(text + 4), llvm::SMLoc::getFromPointer(text + 5));
  for (int i = 0; i < 4; ++i)
    engine.report(DiagId::UnknownName, at, "z");
  engine.report(DiagId::UnknownName, at, "w");
  REQUIRE(collected.diagnostics.size() == 2);
  CHECK_FALSE(engine.limitReached());
  engine.report(DiagId::UnknownName, at, "v");
  CHECK(collected.diagnostics.back().kind == DiagId::TooManyErrors);
}

TEST_CASE("text diagnostics are clang-style with the line and a caret") {
  llvm::SourceMgr sources;
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy("let x = 1;\nlet y = $;\n", "a.fsl"), llvm::SMLoc());
  const char *start = sources.getMemoryBuffer(buffer)->getBufferStart();
  std::string text;
  llvm::raw_string_ostream out(text);
  TextDiagnosticPrinter printer(sources, out, /*colors=*/false);
  DiagnosticEngine engine(printer);
  llvm::SMLoc dollar = llvm::SMLoc::getFromPointer(start + 19);
  engine
      .report(DiagId::InvalidCharacter,
              llvm::SMRange(dollar, llvm::SMLoc::getFromPointer(start + 20)), "'$'")
      .note(
          DiagId::NoteOpenedHere,
          llvm::SMRange(llvm::SMLoc::getFromPointer(start), llvm::SMLoc::getFromPointer(start + 3)),
          "let");
  CHECK(text == "a.fsl:2:9: error: invalid character '$' in program text [invalid-character]\n"
                "let y = $;\n"
                "        ^\n"
                "a.fsl:1:1: note: 'let' opened here [note-opened-here]\n"
                "let x = 1;\n"
                "^~~\n");
}

TEST_CASE("JSON diagnostics are one document with 1-based ranges") {
  llvm::SourceMgr sources;
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy("ab\ncd $\n", "b.fsl"), llvm::SMLoc());
  const char *start = sources.getMemoryBuffer(buffer)->getBufferStart();
  std::string text;
  llvm::raw_string_ostream out(text);
  JsonDiagnosticPrinter printer(sources, out);
  DiagnosticEngine engine(printer);
  engine.report(
      DiagId::InvalidCharacter,
      llvm::SMRange(llvm::SMLoc::getFromPointer(start + 6), llvm::SMLoc::getFromPointer(start + 7)),
      "'$'");
  engine.report(DiagId::NoInputFiles, llvm::SMRange());
  engine.finish();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  REQUIRE(static_cast<bool>(parsed));
  const llvm::json::Object *document = parsed->getAsObject();
  REQUIRE(document);
  CHECK(document->getInteger("version") == 1);
  const llvm::json::Array *list = document->getArray("diagnostics");
  REQUIRE(list);
  REQUIRE(list->size() == 2);
  const llvm::json::Object *first = (*list)[0].getAsObject();
  CHECK(first->getString("id") == "invalid-character");
  CHECK(first->getString("file") == "b.fsl");
  CHECK(first->getObject("range")->getObject("start")->getInteger("line") == 2);
  CHECK(first->getObject("range")->getObject("start")->getInteger("column") == 4);
  CHECK(first->getObject("range")->getObject("end")->getInteger("column") == 5);
  const llvm::json::Object *second = (*list)[1].getAsObject();
  CHECK_FALSE(second->get("file"));
  CHECK(second->getString("severity") == "error");
}
