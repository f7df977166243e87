// Compilation.h — one .fsl file through the compiler: parse → sema → schedules (the
// file's, or the heuristics') → check → lowering → CUDA, and PTX or a cubin by NVRTC.
//
// The command-line driver (driver/) and the JIT (jit/) both compile through this class.
// Each phase is a call, made in order; each reports into the DiagnosticEngine it is
// given (the driver collects some of them under -verify) and says whether it succeeded.
// The results stay here for the caller to read or take: the syntax tree, the Fusion IR,
// the planned and checked schedules, the lowered Kernel IR, and the generated sources.
//
//   llvm::SourceMgr sources;
//   pipeline::Compilation compilation(options, sources, "f.fsl");
//   unsigned buffer = pipeline::addSourceText(sources, "f.fsl", text);
//   if (compilation.parse(buffer, diagnostics) && compilation.analyze(diagnostics) &&
//       compilation.schedule(diagnostics) && compilation.lower(diagnostics))
//     for (const auto &fusion : compilation.program()->fusions)
//       codegen::GeneratedSources cuda = compilation.generate(*fusion);
#pragma once

#include "codegen/CudaCodegen.h"
#include "codegen/Nvrtc.h"
#include "pipeline/Options.h"
#include "pipeline/SchedulePlanning.h"
#include "pipeline/Specialize.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace fsl {
class DiagnosticEngine;
struct Program;
namespace ast {
struct File;
}
namespace kir {
struct Program;
}
namespace tuning {
class Database;
}
} // namespace fsl

namespace fsl::pipeline {

class Compilation {
public:
  /// `path` names the main file as diagnostics do (`<stdin>` for standard input); the
  /// generated sources name it by its file name only.
  Compilation(Options options, llvm::SourceMgr &sources, std::string path);
  ~Compilation();
  Compilation(Compilation &&) noexcept;
  Compilation &operator=(Compilation &&) noexcept;

  // --- The phases, in order ------------------------------------------------------------

  /// Parses the main file held in `buffer` of the source manager; drops the declarations
  /// of Options::runtimeDims. Whether there is a syntax tree (there may be errors too).
  bool parse(unsigned buffer, DiagnosticEngine &diagnostics);
  /// Sema on the parsed file: its imports, names and types, static dimensions (with the
  /// specialized ones). Whether there is a Fusion IR (there is none after errors).
  bool analyze(DiagnosticEngine &diagnostics);
  /// Plans the schedules (heuristics for `= auto`, and for every fusion without a
  /// schedule under Options::scheduleEveryFusion), builds and checks them. Whether no
  /// error was reported. Options::tuningDatabase is read first: its errors stop here.
  bool schedule(DiagnosticEngine &diagnostics);
  /// Lowers the checked schedules of each wanted fusion (Options::onlyFusions) to Kernel
  /// IR; a fusion with no schedule for some sizes is reported. Whether no error was.
  bool lower(DiagnosticEngine &diagnostics);

  /// needs-explicit-schedule for each `= auto` no heuristic could fill (a printed file
  /// would show nothing for the sizes it covers); false after reporting one.
  bool reportUnscheduled(DiagnosticEngine &diagnostics) const;

  /// The CUDA kernels, launcher and header of one lowered fusion.
  codegen::GeneratedSources generate(const ir::Fusion &fusion) const;
  /// The kernels of one fusion compiled by NVRTC to a cubin or PTX; reports why they do
  /// not compile.
  std::optional<codegen::NvrtcResult> compile(const ir::Fusion &fusion,
                                              const codegen::GeneratedSources &sources, bool cubin,
                                              const std::vector<std::string> &nvrtcOptions,
                                              DiagnosticEngine &diagnostics) const;

  // --- Results -------------------------------------------------------------------------

  const Options &options() const { return options_; }
  const std::string &path() const { return path_; }
  /// The syntax tree, until analyze() takes it (the Program's `main` holds it then).
  const ast::File *file() const { return file_.get(); }
  std::unique_ptr<ast::File> takeFile() { return std::move(file_); }
  /// After analyze(): the main file, its imports and the Fusion IR of its fusions.
  Program *program() const { return program_.get(); }
  std::unique_ptr<Program> takeProgram() { return std::move(program_); }
  /// The names a -D may give a value in this file: its declared static dimensions.
  const std::set<std::string> &staticDimNames() const { return staticDimNames_; }
  /// The static dimensions that Options::runtimeDims made runtime sizes, by fusion.
  const DroppedDims &droppedStaticDims() const { return droppedStaticDims_; }
  const SchedulePlan &schedules() const { return plan_; }
  /// The lowered programs, in the order of the fusions.
  const std::vector<std::unique_ptr<kir::Program>> &programs() const { return programs_; }
  /// The lowered program of `fusion`; null when it was not lowered.
  const kir::Program *programOf(const ir::Fusion &fusion) const;
  /// Whether `fusion` is lowered and generated (Options::onlyFusions).
  bool wanted(const ir::Fusion &fusion) const;
  /// The name of a fusion's output files: with a symbol prefix, two specializations of
  /// one fusion can share a directory.
  std::string baseName(const ir::Fusion &fusion) const;

private:
  bool reportDeclined(const ir::Fusion &fusion, DiagnosticEngine &diagnostics) const;
  codegen::CodegenOptions codegenOptions() const;
  std::string relativeLocation(llvm::SMRange range) const;

  Options options_;
  llvm::SourceMgr *sources_;
  std::string path_;
  std::unique_ptr<ast::File> file_;
  std::unique_ptr<Program> program_;
  std::set<std::string> staticDimNames_;
  DroppedDims droppedStaticDims_;
  std::unique_ptr<tuning::Database> tuningDatabase_; // Options::tuningDatabase, once read
  SchedulePlan plan_;
  std::vector<std::unique_ptr<kir::Program>> programs_;
  std::map<const ir::Fusion *, const kir::Program *> programByFusion_;
};

} // namespace fsl::pipeline
