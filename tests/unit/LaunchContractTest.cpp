// LaunchContractTest.cpp — a launch's contract (codegen/LaunchContract.h) from lowered
// programs, and its serialization as the JIT's launch metadata (fsl/compiler.h), which
// must stay the text it was before the contract existed.
#include "codegen/LaunchContract.h"
#include "fsl/compiler.h"
#include "kir/IR.h"
#include "pipeline/Compilation.h"
#include "pipeline/Sources.h"
#include "pipeline/Targets.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/Target.h"

#include <doctest/doctest.h>
#include <llvm/Support/SourceMgr.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace fsl;
using codegen::ContractArg;
using codegen::ContractParam;
using codegen::LaunchContract;
using codegen::TensorRole;

namespace {

/// rms_norm_add of the stdlib with its weight named as a local of the launcher.
const char *kNormAdd = R"(
fusion rms_norm_add<H = 4096>(
    x: bf16[T, H],
    residual: inout bf16[T, H],
    status: bf16[H],
    eps: f32 = 1e-6,
) -> (y: bf16[T, H]) {
    let h = f32(x) + f32(residual);
    residual = bf16(h);
    let ms = mean(h * h, over H);
    y = bf16(h * rsqrt(ms + eps) * f32(status));
}
)";

/// A row's maximum: an empty row leaves an output with elements.
const char *kRowMax = "fusion row_max(x: f32[T, V]) -> (m: f32[T]) { m = max(x, over V); }\n";

/// A text through every phase, as the JIT compiles it.
struct Lowered {
  llvm::SourceMgr sources;
  CollectingDiagnosticConsumer collected;
  DiagnosticEngine diagnostics{collected};
  std::optional<pipeline::Compilation> compilation;
  const ir::Fusion *fusion = nullptr;
  const kir::Program *program = nullptr;
  codegen::CodegenOptions options; // the target's limits, no symbol prefix

  explicit Lowered(const std::string &text) {
    std::optional<pipeline::FoundTarget> target =
        pipeline::findTarget(kDefaultTarget, FSL_TEST_STDLIB_DIR, sources, diagnostics);
    REQUIRE(target);
    options.limits = target->target.launchLimits();
    pipeline::Options compile;
    compile.target = target->target;
    compile.stdlibDir = FSL_TEST_STDLIB_DIR;
    compile.scheduleEveryFusion = true;
    compilation.emplace(compile, sources, "/nonexistent/memory.fsl");
    unsigned buffer = pipeline::addSourceText(sources, "/nonexistent/memory.fsl", text);
    REQUIRE((compilation->parse(buffer, diagnostics) && compilation->analyze(diagnostics) &&
             compilation->schedule(diagnostics) && compilation->lower(diagnostics)));
    fusion = compilation->program()->fusions.front().get();
    program = compilation->programOf(*fusion);
    REQUIRE(program);
  }
};

size_t tensorNamed(const LaunchContract &contract, const std::string &name) {
  for (size_t i = 0; i < contract.tensors.size(); ++i)
    if (contract.tensors[i].name == name)
      return i;
  FAIL("no tensor " << name);
  return 0;
}

} // namespace

TEST_CASE("a launch contract lists the launcher's tensors, scalars and dimensions in order") {
  Lowered lowered(kNormAdd);
  LaunchContract contract = codegen::describeLaunch(*lowered.program, lowered.options);
  CHECK(contract.fusion == "rms_norm_add");
  CHECK(contract.launcher == "fsl_rms_norm_add");
  CHECK(contract.limits.target == "h200");

  // Tensors in the launcher's order: parameters, then the outputs of their own.
  REQUIRE(contract.tensors.size() == 4);
  std::vector<std::string> names;
  std::vector<TensorRole> roles;
  for (const codegen::ContractTensor &t : contract.tensors) {
    names.push_back(t.name);
    roles.push_back(t.role);
    CHECK(t.elementBytes == 2);
    // Vector accesses are whole elements, or none.
    CHECK(t.vectorBytes % t.elementBytes == 0);
  }
  CHECK(names == std::vector<std::string>{"x", "residual", "status", "y"});
  CHECK(roles == std::vector<TensorRole>{TensorRole::In, TensorRole::InOut, TensorRole::In,
                                         TensorRole::Out});
  // A user name that is a local of the launcher is renamed in C only.
  CHECK(contract.tensors[2].cName != "status");
  CHECK(contract.tensors[0].cName == "x");
  REQUIRE(contract.scalars.size() == 1);
  CHECK(contract.scalars[0].name == "eps");
  CHECK(contract.scalars[0].defaultValue == doctest::Approx(1e-6));
  // The signature puts the scalar where the fusion declares it.
  std::vector<ContractParam::Kind> kinds;
  for (const ContractParam &param : contract.signature)
    kinds.push_back(param.kind);
  CHECK(kinds ==
        std::vector<ContractParam::Kind>{ContractParam::Kind::Tensor, ContractParam::Kind::Tensor,
                                         ContractParam::Kind::Tensor, ContractParam::Kind::Scalar,
                                         ContractParam::Kind::Tensor});

  // T is runtime, defined by x's first axis; H static and reduced.
  REQUIRE(contract.dims.size() == 2);
  const codegen::ContractDim &T =
      contract.dims[0].name == "T" ? contract.dims[0] : contract.dims[1];
  const codegen::ContractDim &H =
      contract.dims[0].name == "H" ? contract.dims[0] : contract.dims[1];
  CHECK(T.isRuntime());
  CHECK(T.var);
  CHECK(!T.reduced);
  REQUIRE(T.axes.size() == 3);
  CHECK(T.axes[0].tensor == 0);
  CHECK(T.axes[0].axis == 0);
  CHECK(!T.emptyRefusal); // every output has T
  CHECK(H.staticExtent == 4096);
  CHECK(H.reduced);
  CHECK(H.axes.size() == 4);

  // Each output against every other tensor, each pair once.
  std::vector<std::pair<size_t, size_t>> pairs;
  for (const codegen::OverlapPair &pair : contract.overlaps)
    pairs.emplace_back(pair.output, pair.other);
  CHECK(pairs == std::vector<std::pair<size_t, size_t>>{{1, 0}, {1, 2}, {1, 3}, {3, 0}, {3, 2}});

  // Kernels and variants: arguments name the launcher's tensors and dimensions.
  REQUIRE(!contract.kernels.empty());
  REQUIRE(!contract.variants.empty());
  CHECK(contract.workspaces.empty());
  for (const codegen::ContractVariant &variant : contract.variants)
    for (unsigned k : variant.launches)
      CHECK(k < contract.kernels.size());
  for (const codegen::ContractKernel &kernel : contract.kernels) {
    CHECK(kernel.symbol == kernel.name); // no symbol prefix
    for (const ContractArg &arg : kernel.args) {
      if (arg.kind == ContractArg::Kind::Tensor)
        CHECK(arg.cName == contract.tensors[tensorNamed(contract, arg.name)].cName);
      if (arg.kind == ContractArg::Kind::Dim) {
        CHECK(arg.name == "T");
        CHECK(arg.cName == T.cName);
      }
    }
  }
}

TEST_CASE("a launch contract refuses an empty call whose output would have elements") {
  Lowered lowered(kRowMax);
  LaunchContract contract = codegen::describeLaunch(*lowered.program, lowered.options);
  REQUIRE(contract.dims.size() == 2);
  for (const codegen::ContractDim &dim : contract.dims) {
    CHECK(dim.isRuntime());
    if (dim.name == "V") {
      CHECK(dim.reduced);
      REQUIRE(dim.emptyRefusal);
      CHECK(dim.emptyRefusal->output == "m");
      REQUIRE(dim.emptyRefusal->outputDims.size() == 1);
      CHECK(contract.dims[dim.emptyRefusal->outputDims[0]].name == "T");
    } else {
      CHECK(!dim.emptyRefusal);
    }
  }
}

TEST_CASE("a signature's contract needs no lowering") {
  Lowered lowered(kNormAdd);
  LaunchContract signature = codegen::describeSignature(*lowered.fusion, {});
  LaunchContract launch = codegen::describeLaunch(*lowered.program, lowered.options);
  REQUIRE(signature.tensors.size() == launch.tensors.size());
  for (size_t i = 0; i < signature.tensors.size(); ++i) {
    CHECK(signature.tensors[i].name == launch.tensors[i].name);
    CHECK(signature.tensors[i].cName == launch.tensors[i].cName);
    CHECK(signature.tensors[i].vectorBytes == 0);
  }
  CHECK(signature.kernels.empty());
  CHECK(signature.variants.empty());
  for (const codegen::ContractDim &dim : signature.dims)
    CHECK(!dim.var);
  CHECK(signature.overlaps.size() == launch.overlaps.size());
}

namespace {

/// The repository (the stdlib's parent) and the metadata libfslc wrote before the launch
/// contract existed: `<program>.<fusion>.signature`, `<program>.<fusion>[.<DIM><N>].launch`
/// or, for a specialization it refuses, `.error` with the message.
const std::string kRoot = std::string(FSL_TEST_STDLIB_DIR) + "/..";
const std::string kExpected = kRoot + "/tests/unit/Inputs/launch-metadata/";

std::optional<std::string> readExpected(const std::string &name) {
  std::ifstream in(kExpected + name, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

TEST_CASE("the launch metadata is the text libfslc wrote before the launch contract") {
  struct Program {
    const char *name; // the expected files' prefix
    std::string path;
    const char *runtimeDims;
  };
  const Program programs[] = {
      {"norms.HS", std::string(FSL_TEST_STDLIB_DIR) + "/std/norms.fsl", "H,S"},
      {"matmul", kRoot + "/examples/matmul.fsl", nullptr},
      {"greedy_token", kRoot + "/examples/greedy_token.fsl", nullptr},
      {"swiglu", kRoot + "/examples/swiglu.fsl", nullptr},
  };
  // The specializations tried: none (every runtime dimension stays), and each of these
  // values of a dimension the fusion has.
  const std::vector<std::pair<const char *, int64_t>> specializations[] = {
      {}, {{"H", 4096}}, {{"H", 7168}}, {{"S", 4096}}};
  int compared = 0;
  for (const Program &program : programs) {
    CAPTURE(program.path);
    fsl_program_options options{};
    options.runtime_dims = program.runtimeDims;
    options.stdlib_dir = FSL_TEST_STDLIB_DIR;
    fsl_program *loaded = nullptr;
    std::vector<char> error(65536);
    REQUIRE(fsl_program_load(program.path.c_str(), &options, &loaded, error.data(), error.size()) ==
            FSL_OK);
    for (int f = 0; f < fsl_program_fusion_count(loaded); ++f) {
      std::string fusion = fsl_program_fusion_name(loaded, f);
      std::string prefix = std::string(program.name) + "." + fusion;
      std::string signature = fsl_program_signature(loaded, fusion.c_str());
      if (std::optional<std::string> expected = readExpected(prefix + ".signature")) {
        CHECK_MESSAGE(signature == *expected, (prefix + ".signature"));
        ++compared;
      }
      for (const auto &dims : specializations) {
        std::string name = prefix;
        std::vector<const char *> names;
        std::vector<int64_t> values;
        for (const auto &[dim, value] : dims) {
          name += "." + std::string(dim) + std::to_string(value);
          names.push_back(dim);
          values.push_back(value);
        }
        std::optional<std::string> launch = readExpected((name + ".launch"));
        std::optional<std::string> refusal = readExpected((name + ".error"));
        if (!launch && !refusal)
          continue;
        fsl_specialization *specialization = nullptr;
        fsl_status status = fsl_program_specialize(loaded, fusion.c_str(), names.data(),
                                                   values.data(), static_cast<int>(names.size()),
                                                   &specialization, error.data(), error.size());
        if (launch) {
          REQUIRE_MESSAGE(status == FSL_OK, (name + ": " + error.data()));
          CHECK_MESSAGE(fsl_specialization_launch(specialization) == *launch, (name + ".launch"));
        } else {
          CHECK(status == FSL_ERROR_COMPILE);
          CHECK_MESSAGE(std::string(error.data()) == *refusal, (name + ".error"));
        }
        fsl_specialization_free(specialization);
        ++compared;
      }
    }
    fsl_program_free(loaded);
  }
  CHECK(compared == 20); // every expected file
}
