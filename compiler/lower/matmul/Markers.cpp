// Markers.cpp — placing and filling the matmul passes' markers.
#include "lower/matmul/Markers.h"

#include "support/Internal.h"

namespace fsl::lower {

kir::Stmt marker(const char *label, std::string what) {
  return kir::withLabel(kir::blockStmt({kir::comment(std::string(label) + ": " + what)}), label);
}

namespace {

bool isMarker(const kir::Stmt &s, const char *label) {
  return s && s->kind == kir::StmtKind::Block && s->label == label;
}

} // namespace

kir::Stmt fillMarkers(const kir::Stmt &root, const char *label,
                      const std::function<kir::Stmt(const kir::Stmt &)> &fill) {
  if (!root)
    return root;
  bool changed = false;
  std::vector<kir::Stmt> body;
  for (const kir::Stmt &child : root->body) {
    if (!isMarker(child, label)) {
      kir::Stmt filled = fillMarkers(child, label, fill);
      changed |= filled != child;
      body.push_back(filled);
      continue;
    }
    changed = true;
    kir::Stmt replacement = fill(child);
    if (root->kind != kir::StmtKind::Block) {
      FSL_INTERNAL_ASSERT(replacement, "a marker outside a block left empty");
      body.push_back(replacement);
    } else if (replacement) {
      std::vector<kir::Stmt> spliced = kir::flattenBlocks({replacement});
      body.insert(body.end(), spliced.begin(), spliced.end());
    }
  }
  return changed ? kir::withBody(root, std::move(body)) : root;
}

} // namespace fsl::lower
