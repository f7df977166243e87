// Markers.h — the placeholders a matmul pass leaves for a later one: an explicit marker
// statement (a Block carrying the label, Context.h's labels::Matmul*, and a comment saying
// what goes there, which --print-after shows), valid Kernel IR until it is filled.
#pragma once

#include "kir/IR.h"

#include <functional>
#include <string>

namespace fsl::lower {

kir::Stmt marker(const char *label, std::string what);

/// `root` with each marker labelled `label` replaced by `fill(marker)`: its statements
/// spliced into the enclosing block when it is an unlabelled block (as kir::block splices
/// them), nothing when null (a marker in a block only).
kir::Stmt fillMarkers(const kir::Stmt &root, const char *label,
                      const std::function<kir::Stmt(const kir::Stmt &)> &fill);

} // namespace fsl::lower
