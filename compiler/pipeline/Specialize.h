// Specialize.h — static and runtime dimensions chosen by the caller rather than the file.
//
// The JIT compiles one text at several sizes: Options::runtimeDims leaves a declared
// static dimension a runtime size, Options::specializeDims makes a dimension static at
// a value. Nothing is written back: the file's text is unchanged.
//
// Runtime dimensions are dropped from the syntax tree before sema: a declaration sema
// would refuse (`<H = 1, H = 2>`, `<H>` without a value, `<H = 0>`) is then never seen,
// which patching the Fusion IR after sema could not undo. Specialized dimensions reach
// sema as defines (a declared static one takes the value, as with -D), and a runtime one
// is made static in the Fusion IR afterwards: the same IR as if it had been declared
// `<D = N>` at its first appearance, with the same diagnostics.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fsl {
class DiagnosticEngine;
struct Program;
namespace ast {
struct File;
}
} // namespace fsl

namespace fsl::pipeline {

/// The names of the static dimension declarations dropped, by fusion.
using DroppedDims = std::map<std::string, std::set<std::string>>;

/// Drops the `<D = N>` declarations of `runtimeDims` from the main file's fusions.
DroppedDims dropRuntimeDims(ast::File &file, const std::vector<std::string> &runtimeDims);

/// The static dimension values sema is given: `defines`, with the specialized values
/// over them.
std::map<std::string, int64_t> semaDefines(const std::map<std::string, int64_t> &defines,
                                           const std::map<std::string, int64_t> &specializeDims);

/// Makes each runtime dimension of `program`'s fusions named in `specializeDims` static.
void specializeRuntimeDims(Program &program, const std::map<std::string, int64_t> &specializeDims);

/// The names a -D may give a value: the static dimensions the main file's fusions
/// declare (after dropRuntimeDims), and the specialized ones they have as runtime sizes.
std::set<std::string> staticDimNames(const ast::File &file,
                                     const std::map<std::string, int64_t> &specializeDims);

/// Every define must name a static dimension some input declares (`declared`, the union
/// of their staticDimNames); false after reporting those that do not.
bool checkDefines(const std::set<std::string> &declared,
                  const std::map<std::string, int64_t> &defines, DiagnosticEngine &diagnostics);

} // namespace fsl::pipeline
