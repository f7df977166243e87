// ConfigTest.cpp — fsl.toml reading and its located errors.
#include "TestSupport.h"

#include "pipeline/Config.h"

#include <map>

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

#include "support/Target.h"

#include <llvm/Support/Path.h>

TEST_CASE("the stdlib target files describe the H100 and the H200") {
  llvm::SourceMgr sources;
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine engine(collected);
  std::vector<std::string> files = targetFiles(FSL_TEST_STDLIB_DIR "/targets");
  REQUIRE(files.size() >= 2);
  std::map<std::string, Target> targets;
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file);
    REQUIRE(buffer);
    unsigned id = sources.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    std::optional<Target> target = parseTarget(sources, id, engine);
    REQUIRE_MESSAGE(target, file);
    CHECK(llvm::sys::path::stem(file) == target->name);
    targets[target->name] = *target;
  }
  CHECK(collected.diagnostics.empty());
  const Target &h200 = targets.at("h200");
  CHECK(h200.arch == "sm_90a");
  CHECK(h200.smCount == 132);
  CHECK(h200.registersPerSm == 65536);
  CHECK(h200.sharedMemoryPerBlock == 227 * 1024);
  CHECK(h200.memoryBandwidthGBps == 4800);
  CHECK(targets.at("h100-sxm").memoryBandwidthGBps < h200.memoryBandwidthGBps);
  // Launch limits: the checker, the launchers and the simulator read these.
  CHECK(h200.maxGridDim == std::array<int64_t, 3>{2147483647, 65535, 65535});
  CHECK(h200.maxBlockDim == std::array<int64_t, 3>{1024, 1024, 64});
  CHECK(h200.maxClusterSize == 8);
  CHECK(targets.at("a100").maxClusterSize == 1);
  CHECK(h200.tensorTflops16 == 989);
}

TEST_CASE("a target file may leave out the tensor rate, not a wrong one") {
  // Only `fslc tune`'s cost model reads tensor_tflops_16bit: a file written before it
  // existed still describes its target.
  std::string h200;
  {
    auto buffer = llvm::MemoryBuffer::getFile(FSL_TEST_STDLIB_DIR "/targets/h200.toml");
    REQUIRE(buffer);
    h200 = (*buffer)->getBuffer().str();
  }
  size_t at = h200.find("tensor_tflops_16bit");
  REQUIRE(at != std::string::npos);
  std::string without = h200.substr(0, at) + h200.substr(h200.find('\n', at) + 1);
  std::string wrong =
      h200.substr(0, at) + "tensor_tflops_16bit = -1\n" + h200.substr(h200.find('\n', at) + 1);
  for (const auto &[text, accepted] : {std::pair{without, true}, std::pair{wrong, false}}) {
    llvm::SourceMgr sources;
    CollectingDiagnosticConsumer collected;
    DiagnosticEngine engine(collected);
    unsigned id = sources.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(text, "custom.toml"), llvm::SMLoc());
    std::optional<Target> target = parseTarget(sources, id, engine);
    CHECK(target.has_value() == accepted);
    if (accepted) {
      CHECK(target->tensorTflops16 == 0);
      CHECK(collected.diagnostics.empty());
    } else {
      REQUIRE(collected.diagnostics.size() == 1);
      CHECK(collected.diagnostics[0].kind == DiagId::ConfigInvalidValue);
      CHECK(collected.diagnostics[0].message.find("tensor_tflops_16bit") != std::string::npos);
    }
  }
}

TEST_CASE("target files with missing, wrong or unknown keys are refused at their line") {
  llvm::SourceMgr sources;
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine engine(collected);
  unsigned id = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy("name = \"x\"\ndescription = \"x\"\narch = \"sm_90a\"\n"
                                           "sm_count = -4\nfavourite_colour = \"green\"\n",
                                           "x.toml"),
      llvm::SMLoc());
  CHECK_FALSE(parseTarget(sources, id, engine));
  bool sawNegative = false, sawUnknown = false, sawMissing = false;
  for (const Diagnostic &d : collected.diagnostics) {
    unsigned line = sources.getLineAndColumn(d.range.Start).first;
    if (d.kind == DiagId::ConfigInvalidValue && line == 4)
      sawNegative = true;
    if (d.kind == DiagId::ConfigUnknownKey && line == 5)
      sawUnknown = true;
    if (d.kind == DiagId::ConfigInvalidValue && d.message.find("warp_size") != std::string::npos)
      sawMissing = true;
  }
  CHECK(sawNegative);
  CHECK(sawUnknown);
  CHECK(sawMissing);
}
