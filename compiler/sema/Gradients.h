// Gradients.h — the check of `fusion f(...) -> (...) backward g, h { ... }` pairings.
//
// A forward fusion names the fusions of its file that compute its gradients. Each
// backward fusion's parameters are saved forward inputs and outputs (same name, element
// type and dimensions), gradients of forward outputs (`grad_<output>`, the output's type
// and dimensions) and forward scalars (same name and type); its outputs are gradients of
// forward tensor inputs (`grad_<input>`), each computed by one backward fusion.
#pragma once

#include "ast/AST.h"
#include "ir/FusionIR.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fsl {

class DiagnosticEngine;

/// Checks the `backward` clauses of `decls` (the main file's) against the built `fusions`
/// (a fusion that failed to build is skipped) and returns the valid pairings: forward
/// fusion name to its backward fusions' names, in the order written.
std::map<std::string, std::vector<std::string>>
checkGradients(const std::vector<ast::DeclPtr> &decls,
               const std::vector<std::unique_ptr<ir::Fusion>> &fusions,
               DiagnosticEngine &diagnostics);

} // namespace fsl
