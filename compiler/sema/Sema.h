// Sema.h — semantic analysis: AST to checked Fusion IR.
//
// Resolves imports (relative to the importing file, then -I directories, then the
// stdlib), names and fn calls (fns are inlined), gives static dimensions their values
// (-D and fsl.toml override the defaults), checks types (no implicit promotion between
// tensor types; literals take the type of what they meet) and named-dimension shapes
// (broadcasting by name, reductions remove the dimensions they name), recognises
// matrix products, and reports every violation at the expression with notes at the
// declarations involved.
#pragma once

#include "ast/AST.h"
#include "ir/FusionIR.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace fsl {

class DiagnosticEngine;

struct SemaOptions {
  std::vector<std::string> includeDirs;
  std::string stdlibDir;
  std::map<std::string, int64_t> defines; // static dimension values from -D / fsl.toml
};

/// One analysed input file and everything it imports.
struct Program {
  std::unique_ptr<ast::File> main;
  std::vector<std::unique_ptr<ast::File>> imported;
  /// IR of the main file's fusions, in declaration order.
  std::vector<std::unique_ptr<ir::Fusion>> fusions;
  /// Names of every static dimension the main file declares (to check -D names).
  std::set<std::string> staticDimNames;
  /// The checked `backward` clauses: a forward fusion's name to its backward fusions'
  /// names, in the order written, and to the inputs whose gradient is another input's
  /// (`grad_residual = grad_x`: {"residual", "x"}) (sema/Gradients.h).
  std::map<std::string, std::vector<std::string>> backwardOf;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> sameGradientOf;
};

/// Analyses `file` (parsed from a buffer of `sources`). Returns the program, or null if
/// errors were reported.
std::unique_ptr<Program> analyze(std::unique_ptr<ast::File> file, llvm::SourceMgr &sources,
                                 DiagnosticEngine &diagnostics, const SemaOptions &options);

} // namespace fsl
