// Gradients.h — the check of `fusion f(...) -> (...) backward g, h { ... }` pairings.
//
// A forward fusion names the fusions of its file that compute its gradients. Each
// backward fusion's parameters are saved forward inputs and outputs (same name, element
// type and dimensions), gradients of forward outputs (`grad_<output>`, the output's type
// and dimensions) and forward scalars (same name and type); its outputs are gradients of
// forward tensor inputs (`grad_<input>`), each computed by one backward fusion, or named
// after `=` as the gradient of another input (`grad_residual = grad_x`: an add's operands).
#pragma once

#include "ast/AST.h"
#include "ir/FusionIR.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fsl {

class DiagnosticEngine;

/// The valid pairings: a forward fusion's name to its backward fusions' names, in the order
/// written, and to the inputs whose gradient is another input's (`grad_residual = grad_x`
/// gives {"residual", "x"}).
struct CheckedGradients {
  std::map<std::string, std::vector<std::string>> backwardOf;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> sameGradientOf;
};

/// Checks the `backward` clauses of `decls` (the main file's) against the built `fusions`
/// (a fusion that failed to build is skipped).
CheckedGradients checkGradients(const std::vector<ast::DeclPtr> &decls,
                                const std::vector<std::unique_ptr<ir::Fusion>> &fusions,
                                DiagnosticEngine &diagnostics);

} // namespace fsl
