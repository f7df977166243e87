// VerifyTest.cpp — reading expectations and matching diagnostics against them.
#include "TestSupport.h"

#include "driver/Verify.h"

#include <doctest/doctest.h>

using namespace fsl;

namespace {

struct VerifyFixture {
  llvm::SourceMgr sources;
  CollectingDiagnosticConsumer reported;
  DiagnosticEngine engine{reported};
  unsigned buffer;
  explicit VerifyFixture(const std::string &text) {
    buffer = sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "v.fsl"),
                                        llvm::SMLoc());
  }
  llvm::SMRange lineRange(unsigned line) {
    llvm::SMLoc loc = sources.FindLocForLineAndColumn(buffer, line, 1);
    return llvm::SMRange(loc, loc);
  }
  Diagnostic error(unsigned line, std::string message) {
    return Diagnostic{
        DiagId::SyntaxError, Severity::Error, lineRange(line), std::move(message), {}};
  }
};

} // namespace

TEST_CASE("expectation forms: same line, relative, absolute and counted") {
  VerifyFixture f("x // expected-error {{one}}\n"
                  "// expected-warning@+1 {{two}}\n"
                  "y\n"
                  "// expected-note@-3 {{three}}\n"
                  "// expected-error@7 3 {{four}}\n");
  ExpectationList list = parseExpectations(f.sources, f.buffer, f.engine);
  REQUIRE(list.expectations.size() == 4);
  CHECK(list.expectations[0].line == 1);
  CHECK(list.expectations[0].severity == Severity::Error);
  CHECK(list.expectations[0].text == "one");
  CHECK(list.expectations[1].line == 3);
  CHECK(list.expectations[1].severity == Severity::Warning);
  CHECK(list.expectations[2].line == 1);
  CHECK(list.expectations[2].severity == Severity::Note);
  CHECK(list.expectations[3].line == 7);
  CHECK(list.expectations[3].count == 3);
  CHECK(f.reported.diagnostics.empty());
}

TEST_CASE("expectations outside // comments are ignored; malformed ones are errors") {
  VerifyFixture f("let expected-error = 1;\n// expected-error@+ {{x}}\n// expected-error {{open\n");
  ExpectationList list = parseExpectations(f.sources, f.buffer, f.engine);
  CHECK(list.expectations.empty());
  REQUIRE(f.reported.diagnostics.size() == 2);
  CHECK(f.reported.diagnostics[0].kind == DiagId::VerifyBadDirective);
  CHECK(f.reported.diagnostics[1].kind == DiagId::VerifyBadDirective);
}

TEST_CASE("matching: text is a substring of `message [id]`, on the expected line") {
  VerifyFixture f("a // expected-error {{bad [syntax-error]}}\nb\n");
  std::vector<Diagnostic> produced = {f.error(1, "something bad")};
  CHECK(verifyDiagnostics(f.sources, f.buffer, produced, f.engine));
  CHECK(f.reported.diagnostics.empty());

  std::vector<Diagnostic> wrongLine = {f.error(2, "something bad")};
  CHECK_FALSE(verifyDiagnostics(f.sources, f.buffer, wrongLine, f.engine));
  REQUIRE(f.reported.diagnostics.size() == 2);
  CHECK(f.reported.diagnostics[0].kind == DiagId::VerifyUnexpected);
  CHECK(f.reported.diagnostics[1].kind == DiagId::VerifyNotSeen);
}

TEST_CASE("a count must be met exactly") {
  VerifyFixture f("a // expected-error 2 {{bad}}\n");
  std::vector<Diagnostic> once = {f.error(1, "bad")};
  CHECK_FALSE(verifyDiagnostics(f.sources, f.buffer, once, f.engine));
  std::vector<Diagnostic> thrice = {f.error(1, "bad"), f.error(1, "bad"), f.error(1, "bad")};
  f.reported.diagnostics.clear();
  CHECK_FALSE(verifyDiagnostics(f.sources, f.buffer, thrice, f.engine));
  CHECK(f.reported.diagnostics.back().kind == DiagId::VerifyUnexpected);
}
