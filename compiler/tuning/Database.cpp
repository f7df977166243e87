// Database.cpp — a tuning database parsed with the language's parser, its entries
// checked and indexed by fusion and target.
#include "tuning/Database.h"

#include "parse/Parser.h"
#include "schedule/FromAst.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/SourceMgr.h>

#include <map>

namespace fsl::tuning {
namespace {

/// The comment lines directly above `loc` (each trimmed, `//` and all), nearest last:
/// the parser keeps comments as text only, and a target line needs a location.
std::vector<llvm::StringRef> commentLinesAbove(llvm::StringRef buffer, const char *loc) {
  std::vector<llvm::StringRef> lines;
  size_t lineStart = buffer.rfind('\n', loc - buffer.data());
  while (lineStart != llvm::StringRef::npos && lineStart > 0) {
    size_t previous = buffer.rfind('\n', lineStart); // searches before lineStart
    size_t begin = previous == llvm::StringRef::npos ? 0 : previous + 1;
    llvm::StringRef line = buffer.slice(begin, lineStart).trim();
    if (!line.starts_with("//"))
      break;
    lines.push_back(line);
    lineStart = previous;
  }
  std::reverse(lines.begin(), lines.end());
  return lines;
}

std::string declKindName(const ast::Decl &decl) {
  switch (decl.kind()) {
  case ast::Decl::Kind::Import:
    return "an import";
  case ast::Decl::Kind::Fn:
    return "an fn declaration";
  case ast::Decl::Kind::Fusion:
    return "a fusion declaration";
  case ast::Decl::Kind::Schedule:
    return "a schedule";
  }
  return "a declaration";
}

/// `M == 4096 && N <= 8192`, as written (the key of an entry with its fusion and target).
std::string conditionText(const std::vector<ast::SizeCondition> &when) {
  std::vector<std::string> parts;
  for (const ast::SizeCondition &condition : when)
    parts.push_back(condition.dim.text +
                    (condition.modulus ? " % " + std::to_string(condition.modulus->value) : "") +
                    " " + ast::binaryOpSpelling(condition.op).str() + " " +
                    std::to_string(condition.bound.value));
  return llvm::join(parts, " && ");
}

} // namespace

std::unique_ptr<Database> Database::parse(llvm::SourceMgr &sources, unsigned bufferId,
                                          std::string path,
                                          const std::vector<std::string> &knownTargets,
                                          DiagnosticEngine &diagnostics) {
  unsigned errorsBefore = diagnostics.errorCount();
  auto database = std::unique_ptr<Database>(new Database());
  database->path_ = std::move(path);
  llvm::StringRef buffer = sources.getMemoryBuffer(bufferId)->getBuffer();
  // A database with no entry yet (empty, or comments only) is valid: the heuristics
  // choose everything. The parser would call such a source file empty.
  llvm::SmallVector<llvm::StringRef> lines;
  buffer.split(lines, '\n');
  if (llvm::all_of(lines, [](llvm::StringRef line) {
        line = line.trim();
        return line.empty() || line.starts_with("//");
      }))
    return database;
  std::unique_ptr<ast::File> file = parseFile(sources, bufferId, diagnostics);
  if (!file)
    return nullptr;
  std::string known = llvm::join(knownTargets, ", ");
  std::map<std::string, size_t> byKey; // fusion, target and guard: the entry's index
  std::vector<Entry> entries;
  for (const ast::DeclPtr &decl : file->decls) {
    const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get());
    if (!schedule) {
      diagnostics.report(DiagId::TuningNotSchedule, decl->range, declKindName(*decl));
      continue;
    }
    Entry entry;
    entry.decl = schedule;
    entry.line = sources.getLineAndColumn(schedule->range.Start, bufferId).first;
    llvm::SMRange targetAt;
    for (llvm::StringRef line : commentLinesAbove(buffer, schedule->range.Start.getPointer())) {
      llvm::StringRef text = line.drop_front(2).trim();
      if (text.consume_front("target:") && targetAt.Start.getPointer() == nullptr) {
        entry.target = text.trim().str();
        const char *start = line.data();
        targetAt = llvm::SMRange(llvm::SMLoc::getFromPointer(start),
                                 llvm::SMLoc::getFromPointer(start + line.size()));
      } else {
        entry.measurement.push_back(line.drop_front(2).trim().str());
      }
    }
    if (!targetAt.isValid()) {
      diagnostics.report(DiagId::TuningEntryNoTarget, schedule->fusion.range, schedule->fusion.text,
                         known);
      continue;
    }
    if (!llvm::is_contained(knownTargets, entry.target)) {
      diagnostics.report(DiagId::TuningUnknownTarget, targetAt, entry.target, known);
      continue;
    }
    if (schedule->isAuto && !sched::checkAutoSchedule(*schedule, diagnostics))
      continue;
    std::string key =
        schedule->fusion.text + "\n" + entry.target + "\n" + conditionText(schedule->when);
    auto [earlier, first] = byKey.emplace(key, entries.size());
    if (!first) {
      std::string guard = conditionText(schedule->when);
      diagnostics
          .report(DiagId::TuningDuplicateEntry, schedule->fusion.range, schedule->fusion.text,
                  entry.target, guard.empty() ? "" : " when " + guard)
          .note(DiagId::NoteDeclaredHere, entries[earlier->second].decl->fusion.range,
                schedule->fusion.text, " (the first entry)");
      continue;
    }
    entries.push_back(std::move(entry));
  }
  if (diagnostics.errorCount() != errorsBefore)
    return nullptr;
  database->entries_ = std::move(entries);
  database->file_ = std::move(file);
  return database;
}

std::vector<const Entry *> Database::entriesFor(const std::string &fusion,
                                                const std::vector<std::string> &targetNames) const {
  std::vector<const Entry *> found;
  for (const Entry &entry : entries_)
    if (entry.decl->fusion.text == fusion && llvm::is_contained(targetNames, entry.target))
      found.push_back(&entry);
  return found;
}

} // namespace fsl::tuning
