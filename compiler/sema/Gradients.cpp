// Gradients.cpp — the check of a forward fusion's `backward` fusions (Gradients.h).
#include "sema/Gradients.h"

#include "support/Diagnostics.h"

#include <llvm/ADT/StringExtras.h>

#include <optional>

namespace fsl {
namespace {

constexpr llvm::StringLiteral kGradPrefix = "grad_";

/// "bf16[T, H]" or "f32": a type as the user writes it, with the fusion's dimension names.
std::string typeText(const ir::Fusion &fusion, ir::DType dtype,
                     const std::vector<ir::DimId> &dims) {
  std::string text = ir::dtypeName(dtype).str();
  if (dims.empty())
    return text;
  std::vector<std::string> names;
  for (ir::DimId dim : dims) {
    const ir::Dim &d = fusion.dims[dim];
    names.push_back(d.staticExtent ? d.name + " = " + std::to_string(*d.staticExtent) : d.name);
  }
  return text + "[" + llvm::join(names, ", ") + "]";
}

/// A tensor or scalar of a signature, with the fusion that declares it.
struct Entity {
  const ir::Fusion *fusion = nullptr;
  std::string name;
  ir::DType dtype = ir::DType::F32;
  std::vector<ir::DimId> dims;
  llvm::SMRange range;
  std::string what; // "input", "output", "scalar"

  std::string type() const { return typeText(*fusion, dtype, dims); }
};

Entity ofParam(const ir::Fusion &fusion, const ir::Param &param) {
  return {&fusion,    param.name,  param.dtype,
          param.dims, param.range, param.dims.empty() ? "scalar" : "input"};
}

Entity ofOutput(const ir::Fusion &fusion, const ir::Output &output) {
  return {&fusion, output.name, output.dtype, output.dims, output.range, "output"};
}

class PairingChecker {
public:
  PairingChecker(const ir::Fusion &forward, const ast::Name &clause, DiagnosticEngine &diagnostics)
      : forward_(forward), clause_(clause), diagnostics_(diagnostics) {}

  /// Checks one backward fusion; false if it reported errors. `computed` maps each
  /// forward input's gradient to the backward fusion computing it (across the clause).
  bool check(const ir::Fusion &backward, std::map<std::string, std::string> &computed) {
    bool ok = true;
    for (const ir::Param &param : backward.params)
      ok &= checkParam(backward, param);
    for (const ir::Output &output : backward.outputs)
      if (!output.isInout)
        ok &= checkOutput(backward, output, computed);
    return ok;
  }

private:
  bool checkParam(const ir::Fusion &backward, const ir::Param &param) {
    Entity used = ofParam(backward, param);
    if (param.isInout) {
      diagnostics_
          .report(DiagId::BackwardInout, param.range, backward.name, forward_.name, param.name)
          .note(DiagId::NoteDeclaredHere, clause_.range, backward.name,
                " as a backward fusion of '" + forward_.name + "'");
      return false;
    }
    // A forward input or output of that name: saved for backward.
    for (const ir::Param &p : forward_.params)
      if (p.name == param.name)
        return same(used, ofParam(forward_, p));
    for (const ir::Output &o : forward_.outputs)
      if (!o.isInout && o.name == param.name)
        return same(used, ofOutput(forward_, o));
    // The gradient of a forward output.
    llvm::StringRef name(param.name);
    if (name.starts_with(kGradPrefix) && !param.dims.empty())
      for (const ir::Output &o : forward_.outputs)
        if (!o.isInout && o.name == name.drop_front(kGradPrefix.size()))
          return same(used, ofOutput(forward_, o), "the gradient of output ");
    std::vector<std::string> gradients;
    for (const ir::Output &o : forward_.outputs)
      if (!o.isInout)
        gradients.push_back(kGradPrefix.str() + o.name);
    diagnostics_
        .report(DiagId::BackwardUnknownParam, param.range, param.name, backward.name, forward_.name,
                gradients.empty() ? std::string("it has no outputs")
                                  : "its outputs' gradients: " + llvm::join(gradients, ", "))
        .note(DiagId::NoteDeclaredHere, clause_.range, backward.name,
              " as a backward fusion of '" + forward_.name + "'");
    return false;
  }

  bool checkOutput(const ir::Fusion &backward, const ir::Output &output,
                   std::map<std::string, std::string> &computed) {
    llvm::StringRef name(output.name);
    if (name.starts_with(kGradPrefix))
      for (const ir::Param &p : forward_.params)
        if (!p.dims.empty() && p.name == name.drop_front(kGradPrefix.size())) {
          if (!same(ofOutput(backward, output), ofParam(forward_, p), "the gradient of input "))
            return false;
          auto [it, inserted] = computed.emplace(output.name, backward.name);
          if (!inserted) {
            diagnostics_
                .report(DiagId::BackwardGradientTwice, output.range, output.name, it->second,
                        backward.name, forward_.name)
                .note(DiagId::NoteDeclaredHere, clause_.range, backward.name,
                      " as a backward fusion of '" + forward_.name + "'");
            return false;
          }
          return true;
        }
    std::vector<std::string> gradients;
    for (const ir::Param &p : forward_.params)
      if (!p.dims.empty())
        gradients.push_back(kGradPrefix.str() + p.name);
    diagnostics_
        .report(DiagId::BackwardUnknownOutput, output.range, output.name, backward.name,
                forward_.name,
                gradients.empty() ? std::string("it has no tensor inputs")
                                  : "its inputs' gradients: " + llvm::join(gradients, ", "))
        .note(DiagId::NoteDeclaredHere, clause_.range, backward.name,
              " as a backward fusion of '" + forward_.name + "'");
    return false;
  }

  /// The backward fusion's `used` must have the element type and dimensions (names and
  /// static extents, in order) of the forward's `declared`.
  bool same(const Entity &used, const Entity &declared, const std::string &role = "") {
    bool sameDims = used.dims.size() == declared.dims.size();
    for (size_t i = 0; sameDims && i < used.dims.size(); ++i) {
      const ir::Dim &a = used.fusion->dims[used.dims[i]];
      const ir::Dim &b = declared.fusion->dims[declared.dims[i]];
      sameDims = a.name == b.name && a.staticExtent == b.staticExtent;
    }
    bool sameKind = (used.what == "scalar") == (declared.what == "scalar");
    if (used.dtype == declared.dtype && sameDims && sameKind)
      return true;
    diagnostics_
        .report(DiagId::BackwardTypeMismatch, used.range, used.name, used.fusion->name, used.type(),
                (role.empty() ? declared.what + " " : role) + "'" + declared.name + "'",
                forward_.name, declared.type())
        .note(DiagId::NoteDeclaredHere, declared.range, declared.name, "")
        .note(DiagId::NoteDeclaredHere, clause_.range, used.fusion->name,
              " as a backward fusion of '" + forward_.name + "'");
    return false;
  }

  const ir::Fusion &forward_;
  const ast::Name &clause_;
  DiagnosticEngine &diagnostics_;
};

/// `grad_a = grad_b` of `forward`'s clause: input a's gradient is input b's, which a
/// backward fusion computes (`computed`, filled by the fusions' checks; an item it admits
/// is added, so a second item for a is refused). The pair {a, b}, or none after an error.
std::optional<std::pair<std::string, std::string>>
checkSameGradient(const ir::Fusion &forward, const ast::FusionDecl::SameGradient &item,
                  std::map<std::string, std::string> &computed, DiagnosticEngine &diagnostics) {
  std::string text = item.target.text + " = " + item.source.text;
  auto refuse = [&](llvm::SMRange range, const std::string &why) {
    diagnostics.report(DiagId::BackwardSameGradient, range, text, forward.name, why);
    return std::nullopt;
  };
  std::vector<std::string> gradients;
  for (const ir::Param &p : forward.params)
    if (!p.dims.empty())
      gradients.push_back(kGradPrefix.str() + p.name);
  // The tensor input a side names, or null.
  auto inputOf = [&](const ast::Name &side) -> const ir::Param * {
    llvm::StringRef name(side.text);
    if (!name.starts_with(kGradPrefix))
      return nullptr;
    for (const ir::Param &p : forward.params)
      if (!p.dims.empty() && p.name == name.drop_front(kGradPrefix.size()))
        return &p;
    return nullptr;
  };
  const ir::Param *target = inputOf(item.target), *source = inputOf(item.source);
  std::string known = gradients.empty() ? std::string("it has no tensor inputs")
                                        : "its inputs' gradients: " + llvm::join(gradients, ", ");
  if (!target)
    return refuse(item.target.range, "'" + item.target.text +
                                         "' is not the gradient of a tensor input of '" +
                                         forward.name + "' (" + known + ")");
  if (!source)
    return refuse(item.source.range, "'" + item.source.text +
                                         "' is not the gradient of a tensor input of '" +
                                         forward.name + "' (" + known + ")");
  if (target == source)
    return refuse(item.range, "an input's gradient cannot be its own");
  auto computedBy = computed.find(item.target.text);
  if (computedBy != computed.end())
    return refuse(item.target.range, "'" + item.target.text + "' is computed already (" +
                                         (computedBy->second.empty()
                                              ? std::string("by an earlier item of the clause")
                                              : "by backward fusion '" + computedBy->second + "'") +
                                         ")");
  auto sourceBy = computed.find(item.source.text);
  if (sourceBy == computed.end() || sourceBy->second.empty())
    return refuse(item.source.range,
                  "no backward fusion of the clause computes '" + item.source.text + "'");
  Entity a = ofParam(forward, *target), b = ofParam(forward, *source);
  bool sameDims = a.dims == b.dims;
  if (a.dtype != b.dtype || !sameDims)
    return refuse(item.range, "'" + target->name + "' is " + a.type() + " but '" + source->name +
                                  "' is " + b.type() + "; inputs sharing a gradient have one type");
  computed.emplace(item.target.text, ""); // given by this item, not a fusion
  return std::make_pair(target->name, source->name);
}

} // namespace

CheckedGradients checkGradients(const std::vector<ast::DeclPtr> &decls,
                                const std::vector<std::unique_ptr<ir::Fusion>> &fusions,
                                DiagnosticEngine &diagnostics) {
  std::map<std::string, const ast::FusionDecl *> declared;
  for (const ast::DeclPtr &decl : decls)
    if (const auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get()))
      declared.emplace(fusion->name.text, fusion);
  std::map<std::string, const ir::Fusion *> built;
  for (const auto &fusion : fusions)
    built.emplace(fusion->name, fusion.get());

  CheckedGradients pairings;
  for (const ast::DeclPtr &decl : decls) {
    const auto *fusion = llvm::dyn_cast<ast::FusionDecl>(decl.get());
    if (!fusion || (fusion->backward.empty() && fusion->sameGradients.empty()))
      continue;
    auto forward = built.find(fusion->name.text);
    if (forward == built.end() || declared.at(fusion->name.text) != fusion)
      continue; // not built (errors reported), or a redefinition
    bool ok = true;
    for (const ir::Param &param : forward->second->params)
      if (param.isInout) {
        diagnostics
            .report(DiagId::BackwardOfInout,
                    (fusion->backward.empty() ? fusion->sameGradients.front().range
                                              : fusion->backward.front().range),
                    fusion->name.text, param.name)
            .note(DiagId::NoteDeclaredHere, param.range, param.name, "");
        ok = false;
      }
    std::map<std::string, std::string> computed;
    std::vector<std::string> names;
    for (const ast::Name &name : fusion->backward) {
      if (!declared.count(name.text) || name.text == fusion->name.text) {
        diagnostics.report(DiagId::BackwardUnknownFusion, name.range, fusion->name.text, name.text,
                           name.text == fusion->name.text
                               ? std::string("a fusion cannot be its own backward")
                               : std::string("no fusion of this file has that name (an import "
                                             "brings fns only)"));
        ok = false;
        continue;
      }
      auto backward = built.find(name.text);
      if (backward == built.end()) {
        ok = false; // its own errors are reported
        continue;
      }
      ok &= PairingChecker(*forward->second, name, diagnostics).check(*backward->second, computed);
      names.push_back(name.text);
    }
    std::vector<std::pair<std::string, std::string>> same;
    if (!fusion->sameGradients.empty() && fusion->backward.empty()) {
      const ast::FusionDecl::SameGradient &first = fusion->sameGradients.front();
      diagnostics.report(DiagId::BackwardSameGradient, first.range,
                         first.target.text + " = " + first.source.text, fusion->name.text,
                         "the clause names no backward fusion to compute '" + first.source.text +
                             "'");
      ok = false;
    } else if (ok) { // (after an error above, what the fusions compute is not known)
      for (const ast::FusionDecl::SameGradient &item : fusion->sameGradients)
        if (auto pair = checkSameGradient(*forward->second, item, computed, diagnostics))
          same.push_back(*pair);
        else
          ok = false;
    }
    if (ok) {
      pairings.backwardOf.emplace(fusion->name.text, std::move(names));
      if (!same.empty())
        pairings.sameGradientOf.emplace(fusion->name.text, std::move(same));
    }
  }
  return pairings;
}

} // namespace fsl
