// compiler_api.cpp — libfslc's C API (fsl/compiler.h): the compilation library
// (pipeline/Compilation.h) on a text in memory, with dimensions made static per
// specialization, and the launch metadata of the lowered program (its LaunchContract,
// codegen/LaunchContract.h, serialized as launch_plan.h describes).
#include "fsl/compiler.h"

#include "codegen/CudaCodegen.h"
#include "codegen/LaunchContract.h"
#include "ir/FusionIR.h"
#include "kir/IR.h"
#include "pipeline/Compilation.h"
#include "pipeline/Settings.h"
#include "pipeline/Sources.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "support/LargeStack.h"
#include "support/SourceFile.h"
#include "support/Target.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef FSL_STDLIB_DIR
#define FSL_STDLIB_DIR "stdlib"
#endif

struct fsl_program {
  std::string name; // as given: diagnostics, imports, the generated sources' first line
  std::string text;
  std::vector<std::string> runtimeDims;
  std::string target, arch, stdlibDir;
  /// The tuning database: none given (fsl.toml's, if any), "" (none at all), or a path.
  std::optional<std::string> tuningDatabase;
  std::vector<std::string> fusions;
  std::map<std::string, std::string> signatures; // launch metadata without kernels
  std::map<std::string, std::set<std::string>> dimsOf;
};

struct fsl_specialization {
  std::string name, source, launch;
};

namespace {

fsl_status fail(fsl_status status, char *error, size_t size, const std::string &message) {
  if (error && size)
    std::snprintf(error, size, "%s", message.c_str());
  return status;
}

void succeed(char *error, size_t size) {
  if (error && size)
    error[0] = '\0';
}

/// The number as the metadata spells it: integers exactly, others to 17 digits.
std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

// --- Launch metadata -------------------------------------------------------------------

// The metadata is the serialization of a fusion's LaunchContract (codegen/LaunchContract.h),
// the facts the generated launcher prints as C++; jit/src/launch_plan.h parses it.

/// The signature lines of a contract (launch_plan.h's format), after `fsl-launch 1`.
void writeSignature(const fsl::codegen::LaunchContract &contract, std::ostream &out) {
  using namespace fsl::codegen;
  out << "fusion " << contract.fusion << "\n";
  for (const ContractDim &dim : contract.dims)
    out << "dim " << dim.name
        << (dim.staticExtent ? " static " + std::to_string(*dim.staticExtent) : " runtime") << "\n";
  for (const ContractDim &dim : contract.dims)
    if (dim.reduced)
      out << "reduced " << dim.name << "\n";
  for (const ContractParam &param : contract.signature) {
    if (param.kind == ContractParam::Kind::Scalar) {
      const ContractScalar &scalar = contract.scalars[param.index];
      out << "scalar " << scalar.name << " " << fsl::ir::dtypeName(scalar.dtype).str();
      if (scalar.defaultValue)
        out << " " << number(*scalar.defaultValue);
      out << "\n";
      continue;
    }
    const ContractTensor &tensor = contract.tensors[param.index];
    out << "tensor " << tensor.name << " " << fsl::ir::dtypeName(tensor.dtype).str() << " "
        << roleName(tensor.role).str() << " " << tensor.vectorBytes
        << (tensor.strided ? " strided" : "");
    for (fsl::ir::DimId dim : tensor.dims)
      out << " " << contract.dims[dim].name;
    out << "\n";
  }
}

/// An integer expression over the runtime dimensions in prefix form; false (with the
/// reason) for anything the metadata cannot express.
bool writeExpr(const fsl::kir::Expr &e, const std::map<const fsl::kir::Var *, std::string> &dims,
               std::string &out, std::string &why) {
  using namespace fsl::kir;
  if (!e) {
    out += "1";
    return true;
  }
  switch (e->kind) {
  case ExprKind::Const:
    if (e->constant != static_cast<double>(static_cast<int64_t>(e->constant))) {
      why = "a launch value that is not an integer";
      return false;
    }
    out += std::to_string(static_cast<int64_t>(e->constant));
    return true;
  case ExprKind::Var: {
    auto found = dims.find(e->var.get());
    if (found == dims.end()) {
      why = "a launch value that depends on '" + e->var->name + "', no runtime dimension";
      return false;
    }
    out += found->second;
    return true;
  }
  case ExprKind::Cast:
    return writeExpr(e->operands[0], dims, out, why);
  case ExprKind::Unary:
    if (e->unary == UnaryOp::Neg || e->unary == UnaryOp::Not) {
      out += e->unary == UnaryOp::Neg ? "( neg " : "( ! ";
      if (!writeExpr(e->operands[0], dims, out, why))
        return false;
      out += " )";
      return true;
    }
    why = "a launch value computed with " + unaryName(e->unary).str();
    return false;
  case ExprKind::Select:
  case ExprKind::Binary: {
    std::string op = "?";
    if (e->kind == ExprKind::Binary) {
      static const std::map<BinaryOp, const char *> names = {
          {BinaryOp::Add, "+"},   {BinaryOp::Sub, "-"},  {BinaryOp::Mul, "*"},
          {BinaryOp::Div, "/"},   {BinaryOp::Mod, "%"},  {BinaryOp::Min, "min"},
          {BinaryOp::Max, "max"}, {BinaryOp::Lt, "<"},   {BinaryOp::Le, "<="},
          {BinaryOp::Gt, ">"},    {BinaryOp::Ge, ">="},  {BinaryOp::Eq, "=="},
          {BinaryOp::Ne, "!="},   {BinaryOp::And, "&&"}, {BinaryOp::Or, "||"}};
      auto found = names.find(e->binary);
      if (found == names.end()) {
        why = "a launch value computed with " + binaryName(e->binary).str();
        return false;
      }
      op = found->second;
    }
    out += "( " + op;
    for (const Expr &operand : e->operands) {
      out += " ";
      if (!writeExpr(operand, dims, out, why))
        return false;
    }
    out += " )";
    return true;
  }
  case ExprKind::Load:
    why = "a launch value read from memory";
    return false;
  }
  why = "an unknown expression";
  return false;
}

/// A TMA descriptor's swizzle in bytes (launch_plan.h's tensormap line).
int swizzleBytes(fsl::kir::Swizzle swizzle) {
  switch (swizzle) {
  case fsl::kir::Swizzle::None:
    return 0;
  case fsl::kir::Swizzle::Bytes32:
    return 32;
  case fsl::kir::Swizzle::Bytes64:
    return 64;
  case fsl::kir::Swizzle::Bytes128:
    return 128;
  }
  return -1;
}

/// The whole metadata of a lowered program's contract; false with the reason for a
/// program the JIT cannot launch yet. `pdl`: the launcher's programmatic dependent launch
/// (CodegenOptions, as the launcher is printed with).
bool writeLaunch(const fsl::codegen::LaunchContract &contract, const std::string &arch, bool pdl,
                 std::string &text, std::string &why) {
  using namespace fsl::codegen;
  using fsl::kir::Expr;
  std::map<const fsl::kir::Var *, std::string> dims;
  for (const ContractDim &dim : contract.dims)
    if (dim.var)
      dims[dim.var] = dim.name;
  const fsl::LaunchLimits &limits = contract.limits;
  std::ostringstream out;
  out << "fsl-launch 1\n";
  writeSignature(contract, out);
  out << "target " << limits.target << " " << arch << "\n";
  out << "limits";
  for (int64_t v : limits.maxGridDim)
    out << " " << v;
  for (int64_t v : limits.maxBlockDim)
    out << " " << v;
  out << " " << limits.maxThreadsPerBlock << " " << limits.maxClusterSize << " "
      << limits.maxSharedBytesPerBlock << "\n";
  out << "pdl " << (pdl ? 1 : 0) << "\n";
  for (const ContractWorkspace &workspace : contract.workspaces) {
    std::string line = "workspace " + workspace.name + " ";
    if (!writeExpr(workspace.bytes, dims, line, why))
      return false;
    out << line << "\n";
  }
  for (const ContractKernel &kernel : contract.kernels) {
    out << "kernel " << kernel.name << " " << kernel.maxThreads.value_or(0) << "\n";
    for (const ContractTensorMap &map : kernel.tensorMaps) {
      bool ofSignature = false;
      for (const ContractTensor &tensor : contract.tensors)
        ofSignature |= tensor.name == map.tensor;
      if (!ofSignature) {
        why = "a TMA tensor map of " + map.tensor + ", no tensor of the signature (" + kernel.name +
              ")";
        return false;
      }
      std::string line = "tensormap " + map.map->name + " " + map.tensor + " " +
                         fsl::ir::dtypeName(map.dtype).str() + " " +
                         std::to_string(swizzleBytes(map.swizzle)) + " " +
                         std::to_string(map.extents.size());
      for (const Expr &extent : map.extents) {
        line += " ";
        if (!writeExpr(extent, dims, line, why))
          return false;
      }
      for (int64_t box : map.box)
        line += " " + std::to_string(box);
      out << line << "\n";
    }
    if (kernel.gridFromOccupancy)
      out << "occupancy\n";
    if (kernel.cooperative)
      out << "cooperative\n";
    if (kernel.fullGrid)
      out << "fullgrid " << *kernel.fullGrid << "\n";
    for (const ContractArg &arg : kernel.args) {
      switch (arg.kind) {
      case ContractArg::Kind::Tensor:
        out << (arg.workspace ? "arg workspace " : "arg tensor ") << arg.name << "\n";
        break;
      case ContractArg::Kind::Scalar:
        out << "arg scalar " << arg.name << "\n";
        break;
      case ContractArg::Kind::Dim:
        if (!arg.dim) {
          why = kernel.name + " takes '" + arg.varName + "', no runtime dimension";
          return false;
        }
        out << "arg dim " << arg.name << "\n";
        break;
      case ContractArg::Kind::TensorMap:
        out << "arg tensormap " << arg.tensorMap << "\n";
        break;
      case ContractArg::Kind::Stride:
        out << "arg stride " << arg.name << " " << arg.axis << "\n";
        break;
      }
    }
    auto three = [&](const char *what, const std::array<Expr, 3> &extents) {
      std::string line = what;
      for (const Expr &e : extents) {
        line += " ";
        if (!writeExpr(e, dims, line, why))
          return false;
      }
      out << line << "\n";
      return true;
    };
    if (!three("grid", kernel.grid) || !three("block", kernel.block) ||
        !three("cluster", kernel.cluster))
      return false;
    std::string shared = "shared ";
    if (kernel.sharedBytes) {
      if (!writeExpr(kernel.sharedBytes, dims, shared, why))
        return false;
    } else {
      shared += "0";
    }
    out << shared << "\n";
  }
  for (const ContractVariant &variant : contract.variants) {
    std::string line = "variant ";
    if (!variant.guard)
      line += "always";
    else if (!writeExpr(variant.guard, dims, line, why))
      return false;
    for (unsigned k : variant.launches)
      line += " " + std::to_string(k);
    out << line << "\n";
  }
  out << "end\n";
  text = out.str();
  return true;
}

// --- The compilation, in memory ----------------------------------------------------------

/// One compilation of a program's text, as fslc compiles an input (the nearest fsl.toml
/// read too), with its diagnostics as text.
struct Compiled {
  llvm::SourceMgr sources;
  std::string diagnostics;
  fsl::Settings settings;
  std::optional<fsl::pipeline::Compilation> compilation;
};

/// What one compilation of a program is asked for.
struct Request {
  std::map<std::string, int64_t> specializeDims;
  std::string onlyFusion; // empty: stop after the schedules; else its kernels too
  /// After sema without errors, with the Fusion IR: false stops the compilation there
  /// (FSL_OK: the caller says why).
  std::function<bool(const fsl::pipeline::Compilation &)> analyzed;
  /// With the kernels: each wanted fusion's lowered program and sources.
  std::function<void(const fsl::kir::Program &, const fsl::codegen::GeneratedSources &)> generated;
};

/// Compiles `program` on a thread with a large stack, as fslc does. FSL_OK, or
/// FSL_ERROR_ARGUMENT when fsl.toml or the target do not read, or FSL_ERROR_COMPILE
/// after diagnostics.
fsl_status compile(const fsl_program &program, const Request &request, Compiled &compiled) {
  return static_cast<fsl_status>(fsl::runWithLargeStack([&] {
    llvm::raw_string_ostream errors(compiled.diagnostics);
    fsl::TextDiagnosticPrinter printer(compiled.sources, errors, /*colors=*/false);
    fsl::DiagnosticEngine diagnostics(printer);
    diagnostics.setErrorLimit(50);
    fsl_status status = [&] {
      fsl::SettingsRequest settings;
      settings.firstInput = program.name;
      settings.target = program.target;
      settings.stdlibDir = program.stdlibDir;
      settings.tuningDatabase = program.tuningDatabase.value_or("");
      if (!fsl::configure(settings, compiled.sources, diagnostics, compiled.settings))
        return FSL_ERROR_ARGUMENT;
      if (program.tuningDatabase && program.tuningDatabase->empty())
        compiled.settings.tuningDatabase.clear(); // "": not fsl.toml's either
      fsl::pipeline::Options options = fsl::compileOptionsFrom(compiled.settings);
      options.runtimeDims = program.runtimeDims;
      options.specializeDims = request.specializeDims;
      bool kernels = !request.onlyFusion.empty();
      options.scheduleEveryFusion = kernels;
      if (kernels)
        options.onlyFusions = {request.onlyFusion};
      fsl::pipeline::Compilation &compilation =
          compiled.compilation.emplace(options, compiled.sources, program.name);
      unsigned buffer = fsl::pipeline::addSourceText(compiled.sources, program.name, program.text);
      unsigned errorsBefore = diagnostics.errorCount();
      if (compilation.parse(buffer, diagnostics) && compilation.analyze(diagnostics)) {
        if (request.analyzed && diagnostics.errorCount() == errorsBefore &&
            !request.analyzed(compilation))
          return FSL_OK;
        compilation.schedule(diagnostics);
      }
      bool failed = (!compilation.file() && !compilation.program()) ||
                    diagnostics.errorCount() != errorsBefore;
      // Every define (fsl.toml's) names a static dimension of the program, as fslc checks.
      if (!fsl::pipeline::checkDefines(compilation.staticDimNames(), compiled.settings.defines,
                                       diagnostics))
        failed = true;
      if (failed)
        return FSL_ERROR_COMPILE;
      if (!kernels)
        return FSL_OK;
      if (!compilation.lower(diagnostics))
        return FSL_ERROR_COMPILE;
      for (const auto &fusion : compilation.program()->fusions)
        if (compilation.wanted(*fusion))
          request.generated(*compilation.programOf(*fusion), compilation.generate(*fusion));
      return FSL_OK;
    }();
    diagnostics.finish();
    errors.flush();
    return static_cast<int>(status);
  }));
}

std::vector<std::string> splitNames(const char *list) {
  std::vector<std::string> names;
  if (!list)
    return names;
  std::string current;
  for (const char *c = list;; ++c) {
    if (*c == ',' || *c == '\0') {
      size_t begin = current.find_first_not_of(" \t"), end = current.find_last_not_of(" \t");
      if (begin != std::string::npos)
        names.push_back(current.substr(begin, end - begin + 1));
      current.clear();
      if (!*c)
        break;
    } else {
      current += *c;
    }
  }
  return names;
}

fsl_status load(std::string name, std::string text, const fsl_program_options *options,
                fsl_program **result, char *error, size_t error_size) {
  auto program = std::make_unique<fsl_program>();
  program->name = std::move(name);
  program->text = std::move(text);
  program->target = options && options->target ? options->target : fsl::kDefaultTarget;
  if (options && options->stdlib_dir && *options->stdlib_dir)
    program->stdlibDir = options->stdlib_dir;
  else if (const char *env = std::getenv("FSLC_STDLIB"); env && *env)
    program->stdlibDir = env;
  else
    program->stdlibDir = FSL_STDLIB_DIR;
  program->runtimeDims = splitNames(options ? options->runtime_dims : nullptr);
  if (options && options->tuning_database)
    program->tuningDatabase = options->tuning_database;

  // A name of runtime_dims must be a static dimension the file declares: checked once
  // sema has seen the file (the declarations it drops are kept by their fusion).
  std::string refused;
  Request request;
  request.analyzed = [&](const fsl::pipeline::Compilation &compilation) {
    std::set<std::string> allDims, staticDims;
    const fsl::pipeline::DroppedDims &dropped = compilation.droppedStaticDims();
    for (const auto &fusion : compilation.program()->fusions) {
      auto droppedHere = dropped.find(fusion->name);
      for (const fsl::ir::Dim &dim : fusion->dims) {
        allDims.insert(dim.name);
        if (dim.staticExtent ||
            (droppedHere != dropped.end() && droppedHere->second.count(dim.name)))
          staticDims.insert(dim.name);
      }
    }
    for (const std::string &dim : program->runtimeDims)
      if (!staticDims.count(dim)) {
        refused = "runtime_dims: " + dim + " is not a static dimension of " + program->name +
                  (allDims.count(dim) ? " (it is a runtime size already)" : "");
        return false;
      }
    return true;
  };
  Compiled compiled;
  fsl_status status = compile(*program, request, compiled);
  if (!refused.empty())
    return fail(FSL_ERROR_ARGUMENT, error, error_size, refused);
  if (status != FSL_OK)
    return fail(status, error, error_size,
                compiled.diagnostics.empty() ? "fslc failed" : compiled.diagnostics);
  // The fusions of the file, with their runtime dimensions as the specializations see
  // them.
  for (const auto &fusion : compiled.compilation->program()->fusions) {
    program->arch = compiled.settings.target.arch;
    std::ostringstream out;
    out << "fsl-launch 1\n";
    writeSignature(fsl::codegen::describeSignature(*fusion, {}), out);
    // The fusions computing its gradients (the Python package registers autograd).
    auto backward = compiled.compilation->program()->backwardOf.find(fusion->name);
    if (backward != compiled.compilation->program()->backwardOf.end())
      out << "backward " << llvm::join(backward->second, " ") << "\n";
    auto same = compiled.compilation->program()->sameGradientOf.find(fusion->name);
    if (same != compiled.compilation->program()->sameGradientOf.end())
      for (const auto &[input, source] : same->second)
        out << "same_gradient " << input << " " << source << "\n";
    out << "end\n";
    program->fusions.push_back(fusion->name);
    program->signatures[fusion->name] = out.str();
    for (const fsl::ir::Dim &dim : fusion->dims)
      program->dimsOf[fusion->name].insert(dim.name);
  }
  *result = program.release();
  succeed(error, error_size);
  return FSL_OK;
}

} // namespace

extern "C" fsl_status fsl_program_load(const char *path, const fsl_program_options *options,
                                       fsl_program **program, char *error, size_t error_size) {
  if (!path || !program)
    return fail(FSL_ERROR_NULL_POINTER, error, error_size, "path and program are required");
  *program = nullptr;
  fsl::SourceFile file = fsl::readSourceFile(path);
  if (file.status != fsl::SourceFile::Status::Ok)
    return fail(FSL_ERROR_ARGUMENT, error, error_size,
                std::string("cannot read ") + path +
                    (file.message.empty() ? std::string() : ": " + file.message));
  return load(path, file.buffer->getBuffer().str(), options, program, error, error_size);
}

extern "C" fsl_status fsl_program_load_text(const char *name, const char *text,
                                            const fsl_program_options *options,
                                            fsl_program **program, char *error, size_t error_size) {
  if (!name || !text || !program)
    return fail(FSL_ERROR_NULL_POINTER, error, error_size, "name, text and program are required");
  *program = nullptr;
  return load(name, text, options, program, error, error_size);
}

extern "C" void fsl_program_free(fsl_program *program) { delete program; }

extern "C" int fsl_program_fusion_count(const fsl_program *program) {
  return program ? static_cast<int>(program->fusions.size()) : 0;
}

extern "C" const char *fsl_program_fusion_name(const fsl_program *program, int index) {
  if (!program || index < 0 || index >= static_cast<int>(program->fusions.size()))
    return nullptr;
  return program->fusions[index].c_str();
}

extern "C" const char *fsl_program_arch(const fsl_program *program) {
  return program ? program->arch.c_str() : nullptr;
}

extern "C" const char *fsl_program_target(const fsl_program *program) {
  return program ? program->target.c_str() : nullptr;
}

extern "C" const char *fsl_program_signature(const fsl_program *program, const char *fusion) {
  if (!program || !fusion)
    return nullptr;
  auto found = program->signatures.find(fusion);
  return found == program->signatures.end() ? nullptr : found->second.c_str();
}

extern "C" fsl_status fsl_program_specialize(const fsl_program *program, const char *fusion,
                                             const char *const *dim_names,
                                             const int64_t *dim_values, int dim_count,
                                             fsl_specialization **specialization, char *error,
                                             size_t error_size) {
  if (!program || !fusion || !specialization || dim_count < 0 ||
      (dim_count > 0 && (!dim_names || !dim_values)))
    return fail(FSL_ERROR_NULL_POINTER, error, error_size,
                "program, fusion, specialization and dim_count names and values are required");
  *specialization = nullptr;
  auto dims = program->dimsOf.find(fusion);
  if (dims == program->dimsOf.end()) {
    std::string known;
    for (const std::string &name : program->fusions)
      known += (known.empty() ? "" : ", ") + name;
    return fail(FSL_ERROR_ARGUMENT, error, error_size,
                std::string("no fusion '") + fusion + "' in " + program->name +
                    " (fusions: " + (known.empty() ? "none" : known) + ")");
  }
  Request request;
  request.onlyFusion = fusion;
  std::string name = fusion;
  for (int i = 0; i < dim_count; ++i) {
    if (!dim_names[i] || !dims->second.count(dim_names[i]))
      return fail(FSL_ERROR_ARGUMENT, error, error_size,
                  std::string(fusion) + " has no dimension '" +
                      (dim_names[i] ? dim_names[i] : "(null)") + "'");
    if (dim_values[i] <= 0)
      return fail(FSL_ERROR_ARGUMENT, error, error_size,
                  std::string(dim_names[i]) + " = " + std::to_string(dim_values[i]) +
                      ": a static extent is positive");
    request.specializeDims[dim_names[i]] = dim_values[i];
  }
  for (const auto &[dim, value] : request.specializeDims)
    name += "." + dim + std::to_string(value);
  auto result = std::make_unique<fsl_specialization>();
  result->name = name;
  std::string why;
  bool generated = false;
  Compiled compiled;
  request.generated = [&](const fsl::kir::Program &lowered,
                          const fsl::codegen::GeneratedSources &sources) {
    generated = true;
    result->source = sources.source;
    // As the launcher is printed (Compilation::codegenOptions): the target's limits, and
    // programmatic dependent launch where the architecture has it.
    const fsl::Target &target = compiled.settings.target;
    fsl::codegen::CodegenOptions options;
    options.limits = target.launchLimits();
    options.programmaticDependentLaunch = fsl::codegen::supportsProgrammaticLaunch(target.arch);
    if (!writeLaunch(fsl::codegen::describeLaunch(lowered, options), target.arch,
                     options.programmaticDependentLaunch, result->launch, why))
      why = "the JIT cannot launch " + std::string(fusion) + " yet: its kernels need " + why;
  };
  fsl_status status = compile(*program, request, compiled);
  if (status != FSL_OK || !generated)
    return fail(
        FSL_ERROR_COMPILE, error, error_size,
        name + ": " +
            (compiled.diagnostics.empty() ? "nothing was generated" : compiled.diagnostics));
  if (!why.empty())
    return fail(FSL_ERROR_COMPILE, error, error_size, why);
  *specialization = result.release();
  succeed(error, error_size);
  return FSL_OK;
}

extern "C" const char *fsl_specialization_source(const fsl_specialization *s) {
  return s ? s->source.c_str() : nullptr;
}
extern "C" const char *fsl_specialization_launch(const fsl_specialization *s) {
  return s ? s->launch.c_str() : nullptr;
}
extern "C" const char *fsl_specialization_name(const fsl_specialization *s) {
  return s ? s->name.c_str() : nullptr;
}
extern "C" void fsl_specialization_free(fsl_specialization *s) { delete s; }
