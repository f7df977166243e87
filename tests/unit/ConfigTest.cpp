// ConfigTest.cpp — fsl.toml reading and its located errors.
#include "TestSupport.h"

#include "driver/Config.h"

#include <doctest/doctest.h>

using namespace fsl;

namespace {

struct ConfigFixture {
  llvm::SourceMgr sources;
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine engine{collected};
  std::optional<ProjectConfig> config;
  explicit ConfigFixture(const std::string &text) {
    unsigned buffer = sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "proj/fsl.toml"), llvm::SMLoc());
    config = loadConfig(sources, buffer, engine);
  }
  unsigned firstLine() {
    return sources.getLineAndColumn(collected.diagnostics.at(0).range.Start).first;
  }
};

} // namespace

TEST_CASE("a complete fsl.toml is read, paths relative to the file") {
  ConfigFixture f("[build]\ntarget = \"sm_90\"\ninclude = [\"lib\", \"/abs\"]\noutput = \"out\"\n"
                  "[defines]\nH = 8192\n");
  REQUIRE(f.config);
  CHECK(*f.config->target == "sm_90");
  CHECK(f.config->includeDirs == std::vector<std::string>{"proj/lib", "/abs"});
  CHECK(*f.config->outputDir == "proj/out");
  REQUIRE(f.config->defines.size() == 1);
  CHECK(f.config->defines[0].first == "H");
  CHECK(f.config->defines[0].second == 8192);
}

TEST_CASE("unknown keys, wrong types and bad syntax point at their TOML line") {
  ConfigFixture unknown("[build]\n\ntarge = \"sm_90a\"\n");
  CHECK_FALSE(unknown.config);
  CHECK(unknown.collected.diagnostics.at(0).kind == DiagId::ConfigUnknownKey);
  CHECK(unknown.firstLine() == 3);

  ConfigFixture wrongType("[defines]\nH = 0\n");
  CHECK_FALSE(wrongType.config);
  CHECK(wrongType.collected.diagnostics.at(0).kind == DiagId::ConfigInvalidValue);
  CHECK(wrongType.firstLine() == 2);

  ConfigFixture syntax("[build]\ntarget = \n");
  CHECK_FALSE(syntax.config);
  CHECK(syntax.collected.diagnostics.at(0).kind == DiagId::ConfigSyntaxError);
  CHECK(syntax.firstLine() == 2);
}
