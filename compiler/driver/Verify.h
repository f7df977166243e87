// Verify.h — `fslc -verify`: checks diagnostics against `expected-*` comments.
//
// Like clang's -verify, a test file states the diagnostics it must produce:
//   x = y;  // expected-error {{unknown name 'y'}}
//   // expected-error@+1 {{...}}        the next line
//   // expected-warning@-2 {{...}}      two lines up
//   // expected-note@7 {{...}}          line 7
//   // expected-error 2 {{...}}         twice on this line
//   // expected-no-diagnostics          the file must produce none
// The text between {{ and }} must occur in `message [id]`, so an expectation may name
// the diagnostic id. Every diagnostic must be expected and every expectation met.
#pragma once

#include "support/Diagnostics.h"

#include <vector>

namespace llvm {
class SourceMgr;
}

namespace fsl {

/// One `expected-*` comment.
struct Expectation {
  Severity severity;
  unsigned line;       // line the diagnostic must be on
  unsigned count = 1;  // how many times
  std::string text;    // must occur in `message [id]`
  llvm::SMRange range; // the comment, for reporting
  unsigned seen = 0;
};

struct ExpectationList {
  std::vector<Expectation> expectations;
  bool expectsNoDiagnostics = false;
};

/// Reads the `expected-*` comments of buffer `bufferId`; malformed ones are reported.
ExpectationList parseExpectations(const llvm::SourceMgr &sources, unsigned bufferId,
                                  DiagnosticEngine &report);

/// Compares `produced` (for buffer `bufferId`) with the expectations and reports every
/// mismatch to `report`. Returns true when everything matched.
bool verifyDiagnostics(const llvm::SourceMgr &sources, unsigned bufferId,
                       const std::vector<Diagnostic> &produced, DiagnosticEngine &report);

} // namespace fsl
