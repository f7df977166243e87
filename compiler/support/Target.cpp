// Target.cpp — target TOML files through toml++, every key required and checked.
#include "support/Target.h"

#include "support/Diagnostics.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>

#include <toml++/toml.h>

#include <algorithm>

namespace fsl {

namespace {

llvm::SMRange rangeOf(llvm::SourceMgr &sources, unsigned bufferId,
                      const toml::source_region &region) {
  llvm::SMLoc start =
      sources.FindLocForLineAndColumn(bufferId, region.begin.line, region.begin.column);
  llvm::SMLoc end = sources.FindLocForLineAndColumn(bufferId, region.end.line, region.end.column);
  if (!end.isValid() || end.getPointer() < start.getPointer())
    end = start;
  return llvm::SMRange(start, end);
}

} // namespace

std::optional<Target> parseTarget(llvm::SourceMgr &sources, unsigned bufferId,
                                  DiagnosticEngine &diagnostics) {
  llvm::StringRef text = sources.getMemoryBuffer(bufferId)->getBuffer();
  toml::table root;
  try {
    root = toml::parse(std::string_view(text.data(), text.size()));
  } catch (const toml::parse_error &error) {
    diagnostics.report(DiagId::ConfigSyntaxError, rangeOf(sources, bufferId, error.source()),
                       std::string(error.description()));
    return std::nullopt;
  }
  unsigned errorsBefore = diagnostics.errorCount();
  Target target;
  struct IntField {
    const char *key;
    int64_t Target::*field;
    int axis = -1;         // an element of an array field
    bool optional = false; // may be left out (the field keeps 0)
  };
  static const IntField intFields[] = {
      {"sm_count", &Target::smCount},
      {"warp_size", &Target::warpSize},
      {"max_threads_per_block", &Target::maxThreadsPerBlock},
      {"max_threads_per_sm", &Target::maxThreadsPerSm},
      {"registers_per_sm", &Target::registersPerSm},
      {"max_registers_per_thread", &Target::maxRegistersPerThread},
      {"shared_memory_per_block", &Target::sharedMemoryPerBlock},
      {"shared_memory_per_sm", &Target::sharedMemoryPerSm},
      {"l2_bytes", &Target::l2Bytes},
      {"memory_bytes", &Target::memoryBytes},
      {"memory_bandwidth_gbps", &Target::memoryBandwidthGBps},
      // Only `fslc tune`'s cost model reads it: a target file without it compiles as
      // before, and its candidates are not pruned by estimate.
      {"tensor_tflops_16bit", &Target::tensorTflops16, -1, true},
      {"max_grid_x", nullptr, 0},
      {"max_grid_y", nullptr, 1},
      {"max_grid_z", nullptr, 2},
      {"max_block_x", nullptr, 3},
      {"max_block_y", nullptr, 4},
      {"max_block_z", nullptr, 5},
      {"max_cluster_size", &Target::maxClusterSize},
  };
  std::string known = "name, description, arch, aliases";
  for (const IntField &field : intFields)
    known += std::string(", ") + field.key;
  llvm::SMRange fileStart(llvm::SMLoc::getFromPointer(text.data()),
                          llvm::SMLoc::getFromPointer(text.data()));
  auto requireString = [&](const char *key, std::string &into) {
    const toml::node *node = root.get(key);
    if (!node || !node->is_string()) {
      diagnostics.report(DiagId::ConfigInvalidValue,
                         node ? rangeOf(sources, bufferId, node->source()) : fileStart, key,
                         "a string");
      return;
    }
    into = *node->value<std::string>();
  };
  requireString("name", target.name);
  requireString("description", target.description);
  requireString("arch", target.arch);
  if (const toml::node *aliases = root.get("aliases")) {
    const toml::array *list = aliases->as_array();
    if (!list)
      diagnostics.report(DiagId::ConfigInvalidValue, rangeOf(sources, bufferId, aliases->source()),
                         "aliases", "an array of strings");
    else
      for (const toml::node &item : *list) {
        if (auto alias = item.value<std::string>())
          target.aliases.push_back(*alias);
        else
          diagnostics.report(DiagId::ConfigInvalidValue, rangeOf(sources, bufferId, item.source()),
                             "aliases", "an array of strings");
      }
  }
  for (const IntField &field : intFields) {
    const toml::node *node = root.get(field.key);
    if (!node && field.optional)
      continue;
    if (!node || !node->is_integer() || *node->value<int64_t>() <= 0) {
      diagnostics.report(DiagId::ConfigInvalidValue,
                         node ? rangeOf(sources, bufferId, node->source()) : fileStart, field.key,
                         "a positive integer");
      continue;
    }
    int64_t value = *node->value<int64_t>();
    if (field.field)
      target.*field.field = value;
    else if (field.axis < 3)
      target.maxGridDim[field.axis] = value;
    else
      target.maxBlockDim[field.axis - 3] = value;
  }
  for (auto &[key, node] : root) {
    bool isKnown = key == "name" || key == "description" || key == "arch" || key == "aliases" ||
                   std::any_of(std::begin(intFields), std::end(intFields),
                               [&](const IntField &f) { return key == f.key; });
    if (!isKnown)
      diagnostics.report(DiagId::ConfigUnknownKey, rangeOf(sources, bufferId, key.source()),
                         std::string(key.str()), known);
  }
  if (diagnostics.errorCount() != errorsBefore)
    return std::nullopt;
  return target;
}

std::vector<std::string> targetFiles(llvm::StringRef directory) {
  std::vector<std::string> files;
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(directory, error), end; it != end && !error;
       it.increment(error))
    if (llvm::sys::path::extension(it->path()) == ".toml")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace fsl
