// Database.h — a tuning database: a `.fsl` file of schedule declarations, each the
// measured best schedule of one fusion on one target at the sizes its `when` guard names
// (docs/tuning.md).
//
//   // target: h200
//   // measured: 1.231 ms; heuristics 1.302 ms; ...
//   schedule linear_bias_gelu when M == 4096 && N == 14336 = auto(matmul) { tile_n = 224; }
//
// The file is parsed with the language's own parser (no grammar of its own); the target
// is the `// target: NAME` line among the comments above the declaration, and the other
// comment lines are the measurement, printed with the schedule it gives.
#pragma once

#include "ast/AST.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace fsl {
class DiagnosticEngine;
}

namespace fsl::tuning {

/// One schedule declaration of the database.
struct Entry {
  const ast::ScheduleDecl *decl = nullptr;
  std::string target;                   // as written after `// target:`
  unsigned line = 0;                    // of the `schedule` keyword
  std::vector<std::string> measurement; // the other comment lines above it, without `//`
};

class Database {
public:
  /// Parses buffer `bufferId` of `sources` (the file named `path`) and checks every entry:
  /// declarations other than schedules, a missing or unknown target (`knownTargets`:
  /// names and aliases), two entries for one fusion, target and guard, and the kind and
  /// knobs of `= auto` entries are errors at their line. Null after any error.
  static std::unique_ptr<Database> parse(llvm::SourceMgr &sources, unsigned bufferId,
                                         std::string path,
                                         const std::vector<std::string> &knownTargets,
                                         DiagnosticEngine &diagnostics);

  const std::string &path() const { return path_; }
  /// The entries for `fusion` on a target named `targetNames` (a name and its aliases), in
  /// file order.
  std::vector<const Entry *> entriesFor(const std::string &fusion,
                                        const std::vector<std::string> &targetNames) const;

private:
  std::string path_;
  std::unique_ptr<ast::File> file_;
  std::vector<Entry> entries_;
};

} // namespace fsl::tuning
