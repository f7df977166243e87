// Config.cpp — fsl.toml through toml++, with errors located in the TOML text.
#include "pipeline/Config.h"

#include "support/Diagnostics.h"

#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>

#include <toml++/toml.h>

namespace fsl {
namespace {

class ConfigReader {
public:
  ConfigReader(llvm::SourceMgr &sources, unsigned bufferId, DiagnosticEngine &diagnostics)
      : sources_(sources), bufferId_(bufferId), diagnostics_(diagnostics) {
    directory_ =
        llvm::sys::path::parent_path(sources.getMemoryBuffer(bufferId)->getBufferIdentifier())
            .str();
  }

  std::optional<ProjectConfig> read() {
    llvm::StringRef text = sources_.getMemoryBuffer(bufferId_)->getBuffer();
    toml::table root;
    try {
      root = toml::parse(std::string_view(text.data(), text.size()));
    } catch (const toml::parse_error &error) {
      diagnostics_.report(DiagId::ConfigSyntaxError, at(error.source()),
                          std::string(error.description()));
      return std::nullopt;
    }
    unsigned errorsBefore = diagnostics_.errorCount();
    ProjectConfig config;
    for (auto &[key, node] : root) {
      if (key == "build" && node.is_table())
        readBuild(*node.as_table(), config);
      else if (key == "defines" && node.is_table())
        readDefines(*node.as_table(), config);
      else if (key == "build" || key == "defines")
        diagnostics_.report(DiagId::ConfigInvalidValue, at(node.source()), std::string(key.str()),
                            "a table");
      else
        diagnostics_.report(DiagId::ConfigUnknownKey, at(key.source()), std::string(key.str()),
                            "[build], [defines]");
    }
    if (diagnostics_.errorCount() != errorsBefore)
      return std::nullopt;
    return config;
  }

private:
  llvm::SMRange at(const toml::source_region &region) {
    llvm::SMLoc start =
        sources_.FindLocForLineAndColumn(bufferId_, region.begin.line, region.begin.column);
    llvm::SMLoc end =
        sources_.FindLocForLineAndColumn(bufferId_, region.end.line, region.end.column);
    if (!end.isValid() || end.getPointer() < start.getPointer())
      end = start;
    return llvm::SMRange(start, end);
  }

  std::string relative(const std::string &path) {
    if (llvm::sys::path::is_absolute(path) || directory_.empty())
      return path;
    llvm::SmallString<256> joined(directory_);
    llvm::sys::path::append(joined, path);
    return std::string(joined);
  }

  void readBuild(const toml::table &build, ProjectConfig &config) {
    for (auto &[key, node] : build) {
      std::string name = "build." + std::string(key.str());
      if (key == "target") {
        if (auto value = node.value<std::string>())
          config.target = *value;
        else
          diagnostics_.report(DiagId::ConfigInvalidValue, at(node.source()), name, "a string");
      } else if (key == "output") {
        if (auto value = node.value<std::string>())
          config.outputDir = relative(*value);
        else
          diagnostics_.report(DiagId::ConfigInvalidValue, at(node.source()), name, "a string");
      } else if (key == "tuning_database") {
        if (auto value = node.value<std::string>())
          config.tuningDatabase = relative(*value);
        else
          diagnostics_.report(DiagId::ConfigInvalidValue, at(node.source()), name, "a string");
      } else if (key == "include") {
        const toml::array *list = node.as_array();
        if (!list) {
          diagnostics_.report(DiagId::ConfigInvalidValue, at(node.source()), name,
                              "an array of strings");
          continue;
        }
        for (const toml::node &item : *list) {
          if (auto value = item.value<std::string>())
            config.includeDirs.push_back(relative(*value));
          else
            diagnostics_.report(DiagId::ConfigInvalidValue, at(item.source()), name,
                                "an array of strings");
        }
      } else {
        diagnostics_.report(DiagId::ConfigUnknownKey, at(key.source()), name,
                            "build.target, build.include, build.output, build.tuning_database");
      }
    }
  }

  void readDefines(const toml::table &defines, ProjectConfig &config) {
    for (auto &[key, node] : defines) {
      auto value = node.value<int64_t>();
      if (!value || *value <= 0 || !node.is_integer()) {
        diagnostics_.report(DiagId::ConfigInvalidValue, at(node.source()),
                            "defines." + std::string(key.str()), "a positive integer");
        continue;
      }
      config.defines.emplace_back(std::string(key.str()), *value);
    }
  }

  llvm::SourceMgr &sources_;
  unsigned bufferId_;
  DiagnosticEngine &diagnostics_;
  std::string directory_;
};

} // namespace

std::optional<ProjectConfig> loadConfig(llvm::SourceMgr &sources, unsigned bufferId,
                                        DiagnosticEngine &diagnostics) {
  return ConfigReader(sources, bufferId, diagnostics).read();
}

} // namespace fsl
