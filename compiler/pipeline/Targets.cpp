// Targets.cpp — a target found by name among the stdlib's target files.
#include "pipeline/Targets.h"

#include "pipeline/Sources.h"
#include "support/Diagnostics.h"
#include "support/Suggestions.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Path.h>

namespace fsl::pipeline {

std::optional<FoundTarget> findTarget(const std::string &name, const std::string &stdlibDir,
                                      llvm::SourceMgr &sources, DiagnosticEngine &diagnostics) {
  llvm::SmallString<256> directory(stdlibDir);
  llvm::sys::path::append(directory, "targets");
  std::vector<std::string> known;
  for (const std::string &file : targetFiles(directory)) {
    std::optional<unsigned> buffer = readSource(sources, file, diagnostics);
    if (!buffer)
      continue;
    std::optional<Target> target = parseTarget(sources, *buffer, diagnostics);
    if (!target)
      continue;
    known.push_back(target->name);
    for (const std::string &alias : target->aliases)
      known.push_back(alias + " (" + target->name + ")");
    if (target->name == name || llvm::is_contained(target->aliases, name))
      return FoundTarget{std::move(*target), file};
  }
  std::vector<std::string> names; // the spellings `known` gives, without their "(h200)"
  for (const std::string &entry : known)
    names.push_back(llvm::StringRef(entry).split(' ').first.str());
  diagnostics.report(DiagId::UnknownTarget, llvm::SMRange(), name,
                     known.empty() ? "none found in " + std::string(directory)
                                   : llvm::join(known, ", "),
                     didYouMean(name, names));
  return std::nullopt;
}

} // namespace fsl::pipeline
