// CudaCodegen.cpp — kernels, launcher and header as text.
#include "codegen/CudaCodegen.h"

#include "ir/Printer.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <set>

namespace fsl::codegen {
namespace {

using sched::Parallel;

const char *cType(ir::DType type) {
  switch (type) {
  case ir::DType::Bool:
    return "bool";
  case ir::DType::I32:
    return "int32_t";
  case ir::DType::I64:
    return "int64_t";
  case ir::DType::F64:
    return "double";
  default:
    return "float"; // f32, and bf16 / f16 values held in f32 registers
  }
}

const char *memoryType(ir::DType type) {
  switch (type) {
  case ir::DType::BF16:
    return "__nv_bfloat16";
  case ir::DType::F16:
    return "__half";
  default:
    return cType(type);
  }
}

const char *runtimeDType(ir::DType type) {
  switch (type) {
  case ir::DType::Bool:
    return "FSL_BOOL";
  case ir::DType::I32:
    return "FSL_I32";
  case ir::DType::I64:
    return "FSL_I64";
  case ir::DType::F16:
    return "FSL_F16";
  case ir::DType::BF16:
    return "FSL_BF16";
  case ir::DType::F32:
    return "FSL_F32";
  case ir::DType::F64:
    return "FSL_F64";
  }
  return "FSL_F32";
}

/// Reads element `index` of a pointer of `type` as a register value.
std::string loadExpr(ir::DType type, const std::string &pointer, const std::string &index) {
  if (type == ir::DType::BF16)
    return "__bfloat162float(" + pointer + "[" + index + "])";
  if (type == ir::DType::F16)
    return "__half2float(" + pointer + "[" + index + "])";
  return pointer + "[" + index + "]";
}

std::string storeValue(ir::DType type, const std::string &value) {
  if (type == ir::DType::BF16)
    return "__float2bfloat16_rn(" + value + ")";
  if (type == ir::DType::F16)
    return "__float2half_rn(" + value + ")";
  return "(" + std::string(cType(type)) + ")(" + value + ")";
}

std::string literal(double value, ir::DType type) {
  if (std::isinf(value))
    return std::string(value > 0 ? "" : "-") + (type == ir::DType::F64 ? "FSL_INF64" : "FSL_INF32");
  if (type == ir::DType::Bool)
    return value != 0 ? "true" : "false";
  if (ir::isInteger(type))
    return llvm::formatv("{0}", static_cast<int64_t>(value)).str() +
           (type == ir::DType::I64 ? "LL" : "");
  std::string text = llvm::formatv("{0:e9}", value).str();
  return type == ir::DType::F64 ? text : text + "f";
}

/// A size expression as C++: static dimensions as numbers, runtime ones by name.
std::string sizeText(const sched::SizeExpr &e, const ir::Fusion &fusion) {
  switch (e.kind) {
  case sched::SizeExpr::Kind::Const:
    return std::to_string(e.value);
  case sched::SizeExpr::Kind::Dim:
    return fusion.dims[e.dim].staticExtent ? std::to_string(*fusion.dims[e.dim].staticExtent)
                                           : fusion.dims[e.dim].name;
  case sched::SizeExpr::Kind::CeilDiv:
    return "((" + sizeText(*e.lhs, fusion) + " + " + std::to_string(e.value - 1) + ") / " +
           std::to_string(e.value) + ")";
  case sched::SizeExpr::Kind::Mul:
    return "(" + sizeText(*e.lhs, fusion) + " * " + sizeText(*e.rhs, fusion) + ")";
  }
  return "0";
}

class KernelWriter {
public:
  KernelWriter(const kir::Kernel &kernel, llvm::raw_ostream &out, int64_t registersPerSm)
      : k_(kernel), f_(*kernel.fusion), out_(out), registersPerSm_(registersPerSm) {}

  void write() {
    writeSignature();
    out_ << " {\n";
    writeIndices();
    if (!k_.persistentShared.empty())
      out_ << "  const unsigned fsl_threads = blockDim.x * blockDim.y * blockDim.z;\n"
           << "  const unsigned fsl_tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + "
              "threadIdx.x;\n";
    size_t sharedOffset = 0; // bytes per thread after the reduction scratch
    for (unsigned id : k_.persistent) {
      const ir::Value &value = *f_.values[id];
      if (k_.persistentShared.count(id)) {
        out_ << "  " << cType(value.dtype) << " *" << bufferName(value) << " = reinterpret_cast<"
             << cType(value.dtype) << " *>(fsl_shared + fsl_threads * (8 + " << sharedOffset
             << "));  // persistent " << displayName(value)
             << " in shared memory: " << k_.bufferElements << " per thread\n";
        sharedOffset += k_.bufferElements *
                        (value.dtype == ir::DType::F64 || value.dtype == ir::DType::I64 ? 8 : 4);
      } else {
        out_ << "  " << cType(value.dtype) << " " << bufferName(value) << "[" << k_.bufferElements
             << "];  // persistent " << displayName(value) << " in registers\n";
      }
    }
    writeEarlyLoads();
    for (size_t p = 0; p < k_.phases.size(); ++p)
      writePhase(static_cast<int>(p));
    out_ << "}\n\n";
  }

  /// The kernel's parameters, shared with the launcher.
  std::vector<std::string> parameters() const {
    std::vector<std::string> result;
    for (const ir::Param &param : f_.params) {
      if (param.dims.empty()) {
        result.push_back(std::string(cType(param.dtype)) + " " + param.name);
        continue;
      }
      bool written = false;
      for (const ir::Output &output : f_.outputs)
        written |= output.isInout && f_.params[output.paramIndex].name == param.name;
      result.push_back((written ? "" : "const ") + std::string(memoryType(param.dtype)) + "* " +
                       (written ? "" : "__restrict__ ") + param.name);
    }
    for (const ir::Output &output : f_.outputs)
      if (!output.isInout)
        result.push_back(std::string(memoryType(output.dtype)) + "* __restrict__ " + output.name);
    for (const ir::Dim &dim : f_.dims)
      if (!dim.staticExtent)
        result.push_back("int64_t " + dim.name);
    return result;
  }

private:
  std::string displayName(const ir::Value &value) const {
    return value.name.empty() ? kir::valueName(value) : value.name;
  }
  std::string bufferName(const ir::Value &value) const { return kir::valueName(value) + "_buffer"; }
  std::string accName(const ir::Value &value) const { return kir::valueName(value) + "_acc"; }

  std::string sizeExpr(const sched::SizeExpr &e) const { return sizeText(e, f_); }

  std::string dimExtent(ir::DimId dim) const {
    return f_.dims[dim].staticExtent ? std::to_string(*f_.dims[dim].staticExtent)
                                     : f_.dims[dim].name;
  }

  void writeSignature() {
    std::optional<int64_t> threads = k_.staticThreads();
    out_ << "// " << k_.name << ": schedule of " << f_.name;
    if (!k_.schedule->decl->when.empty()) {
      std::vector<std::string> guards;
      for (const ast::SizeCondition &c : k_.schedule->decl->when)
        guards.push_back(c.dim.text + " " + ast::binaryOpSpelling(c.op).str() + " " +
                         std::to_string(c.bound.value));
      out_ << " when " << llvm::join(guards, " && ");
    }
    // maxrregcount N: as many blocks an SM as N registers a thread allow, which makes
    // ptxas keep each thread within about N registers (exactly N without static threads).
    const ast::MaxRRegCountDirective *registers = k_.schedule->maxRRegCount;
    if (registers)
      out_ << "\n// maxrregcount " << registers->value.value;
    out_ << "\nextern \"C\" __global__ void";
    if (threads) {
      int64_t maxThreads =
          k_.schedule->launchBounds ? k_.schedule->launchBounds->value.value : *threads;
      out_ << " __launch_bounds__(" << maxThreads;
      if (registers)
        out_ << ", "
             << std::max<int64_t>(1, registersPerSm_ / (registers->value.value * maxThreads));
      out_ << ")";
    } else if (registers) {
      out_ << " __maxnreg__(" << registers->value.value << ")";
    }
    out_ << " " << k_.name << "(\n    " << llvm::join(parameters(), ",\n    ") << ")";
  }

  /// Loop index variables get a suffix: a loop may be named like a runtime size (T).
  static std::string var(const kir::KernelLoop &loop) { return loop.name + "_i"; }

  /// Inputs first read after a block reduction, loaded before phase 0 (see
  /// Kernel::earlyInputs): one vector per iteration of the unrolled batch.
  void writeEarlyLoads() {
    if (k_.earlyInputs.empty())
      return;
    std::vector<int> outer = k_.serialLoops();
    outer.pop_back(); // the vector loop
    const kir::KernelLoop &v = k_.loops[k_.vectorLoop];
    int64_t width = *v.extent.value, count = 1;
    std::string linear = "0";
    for (int loop : outer) {
      const kir::KernelLoop &l = k_.loops[loop];
      count *= *l.extent.value;
      linear = linear == "0" ? var(l)
                             : "(" + linear + ") * " + sizeExpr(*l.extent.expr) + " + " + var(l);
    }
    out_ << "\n  // Early loads: read after a block reduction, loaded now so that their latency\n"
         << "  // overlaps the row's loads and reductions.\n";
    for (const ir::Value *value : k_.earlyInputs) {
      const ir::Param &param = f_.params[value->paramIndex];
      out_ << "  " << memoryType(param.dtype) << " " << kir::valueName(*value) << "_early[" << count
           << "][" << width << "];  // " << param.name << ": " << count
           << (count == 1 ? " vector of " : " vectors of ") << width << " x "
           << ir::dtypeName(param.dtype) << "\n";
    }
    std::string indent = "  ";
    out_ << indent << "{\n";
    indent += "  ";
    bool rowGuard = openGuard(predicate(true, Checks::SameForThread), "", indent);
    for (int loop : outer) {
      const kir::KernelLoop &l = k_.loops[loop];
      out_ << indent << "#pragma unroll\n"
           << indent << "for (int64_t " << var(l) << " = 0; " << var(l) << " < "
           << sizeExpr(*l.extent.expr) << "; ++" << var(l) << ") {  // early loads over " << l.name
           << "\n";
      indent += "  ";
    }
    std::string guard = predicate(true, Checks::PerIteration);
    if (!guard.empty()) {
      out_ << indent << "if (" << guard << ") {\n";
      indent += "  ";
    }
    for (const ir::Value *value : k_.earlyInputs) {
      const ir::Param &param = f_.params[value->paramIndex];
      out_ << indent << "fsl_load_vector<" << width * ir::dtypeBytes(param.dtype) << ">("
           << kir::valueName(*value) << "_early[" << linear << "], " << param.name << " + "
           << offsetOf(param.dims, true, true) << ");\n";
    }
    size_t closing = outer.size() + (guard.empty() ? 0 : 1);
    for (size_t i = 0; i < closing; ++i) {
      indent.resize(indent.size() - 2);
      out_ << indent << "}\n";
    }
    closeGuard(rowGuard, indent);
    indent.resize(indent.size() - 2);
    out_ << indent << "}\n";
  }

  void writeIndices() {
    out_ << "  fsl_grid_dependency_wait();  // programmatic dependent launch: see the preamble\n";
    static const char *axes[] = {"x", "y", "z"};
    for (size_t i = 0; i < k_.loops.size(); ++i) {
      const kir::KernelLoop &loop = k_.loops[i];
      if (loop.parallel == Parallel::Serial)
        continue;
      bool block = sched::isBlockIndex(loop.parallel);
      int axis = static_cast<int>(loop.parallel) -
                 (block ? static_cast<int>(Parallel::BIDx) : static_cast<int>(Parallel::TIDx));
      out_ << "  const int64_t " << var(loop) << " = " << (block ? "blockIdx." : "threadIdx.")
           << axes[axis] << ";  // parallelize " << loop.name << " -> "
           << sched::parallelName(loop.parallel) << ", extent " << loop.extent.text << "\n";
    }
  }

  /// The root index of `dim` at the current iteration.
  std::string rootIndex(ir::DimId dim, bool vectorLaneZero) const {
    std::vector<std::string> terms;
    for (size_t i = 0; i < k_.loops.size(); ++i) {
      const kir::KernelLoop &loop = k_.loops[i];
      if (loop.root != dim)
        continue;
      if (vectorLaneZero && static_cast<int>(i) == k_.vectorLoop)
        continue;
      std::string stride = sizeExpr(*loop.stride.expr);
      terms.push_back(stride == "1" ? var(loop) : var(loop) + " * " + stride);
    }
    return terms.empty() ? "0" : llvm::join(terms, " + ");
  }

  /// Row-major offset of the current element; `clamp` reads the last row instead of one
  /// past the end for clamped roots (loads; stores are guarded instead).
  std::string offsetOf(const std::vector<ir::DimId> &dims, bool vectorLaneZero,
                       bool clamp = false) const {
    std::string offset;
    for (size_t i = 0; i < dims.size(); ++i) {
      std::string index = "(" + rootIndex(dims[i], vectorLaneZero) + ")";
      if (clamp && k_.clampedRoots.count(dims[i]))
        index =
            "fsl_clamp_index" + index.substr(0, index.size() - 1) + ", " + dimExtent(dims[i]) + ")";
      offset = i == 0 ? index : "(" + offset + ") * " + dimExtent(dims[i]) + " + " + index;
    }
    return offset.empty() ? "0" : offset;
  }

  /// Which bounds checks a predicate holds: a root that no serial loop walks has the same
  /// check in every iteration of a thread, so it guards a whole loop nest once (checks in
  /// every iteration keep values live across the branches). Rows split over blocks and
  /// threadIdx.y are usually clamped instead and need no check (Kernel::clampedRoots).
  enum class Checks { SameForThread, PerIteration };

  bool sameForThread(ir::DimId root) const {
    for (const kir::KernelLoop &loop : k_.loops)
      if (loop.root == root && loop.parallel == Parallel::Serial)
        return false;
    return true;
  }

  std::string predicate(bool vectorLaneZero, Checks which) const {
    std::vector<std::string> conditions;
    for (ir::DimId root : k_.inexactRoots) {
      if (sameForThread(root) != (which == Checks::SameForThread))
        continue;
      conditions.push_back("(" + rootIndex(root, vectorLaneZero) + ") < " + dimExtent(root));
    }
    return llvm::join(conditions, " && ");
  }

  /// `if (...) ` before a store to a tensor with clamped roots: rows past the end (which
  /// read the last row again) store nothing.
  std::string storeGuard(const std::vector<ir::DimId> &dims) const {
    std::vector<std::string> conditions;
    for (ir::DimId dim : dims)
      if (k_.clampedRoots.count(dim))
        conditions.push_back("(" + rootIndex(dim, true) + ") < " + dimExtent(dim));
    return conditions.empty() ? "" : "if (" + llvm::join(conditions, " && ") + ") ";
  }

  /// Opens `if (condition) {` when there is a condition; returns whether it did.
  bool openGuard(const std::string &condition, const char *comment, std::string &indent) {
    if (condition.empty())
      return false;
    out_ << indent << "if (" << condition << ") {" << comment << "\n";
    indent += "  ";
    return true;
  }

  void closeGuard(bool opened, std::string &indent) {
    if (!opened)
      return;
    indent.resize(indent.size() - 2);
    out_ << indent << "}\n";
  }

  std::string opExpr(const ir::Value &value, const std::vector<std::string> &a) const {
    bool f64 = value.dtype == ir::DType::F64;
    auto fn = [&](const char *name) {
      return std::string(name) + (f64 ? "" : "f") + "(" + a[0] + ")";
    };
    switch (value.op) {
    case ir::Op::Neg:
      return "-" + a[0];
    case ir::Op::Not:
      return "!" + a[0];
    case ir::Op::Exp:
      return fn("exp");
    case ir::Op::Log:
      return fn("log");
    case ir::Op::Sqrt:
      return fn("sqrt");
    case ir::Op::Rsqrt:
      return fn("rsqrt");
    case ir::Op::Tanh:
      return fn("tanh");
    case ir::Op::Erf:
      return fn("erf");
    case ir::Op::Abs:
      return ir::isFloat(value.dtype) ? fn("fabs") : "abs(" + a[0] + ")";
    case ir::Op::Sigmoid:
      return f64 ? "1.0 / (1.0 + exp(-" + a[0] + "))" : "1.0f / (1.0f + expf(-" + a[0] + "))";
    case ir::Op::Add:
      return a[0] + " + " + a[1];
    case ir::Op::Sub:
      return a[0] + " - " + a[1];
    case ir::Op::Mul:
      return a[0] + " * " + a[1];
    case ir::Op::Div:
      if (k_.reciprocalDivisions.count(value.id)) // the divisor is the same for the whole row
        return a[0] + " * (" + (f64 ? "1.0" : "1.0f") + " / " + a[1] + ")";
      return a[0] + " / " + a[1];
    case ir::Op::Max:
      return "fsl_max(" + a[0] + ", " + a[1] + ")";
    case ir::Op::Min:
      return "fsl_min(" + a[0] + ", " + a[1] + ")";
    case ir::Op::Pow:
      return std::string(f64 ? "pow(" : "powf(") + a[0] + ", " + a[1] + ")";
    case ir::Op::Lt:
      return a[0] + " < " + a[1];
    case ir::Op::Le:
      return a[0] + " <= " + a[1];
    case ir::Op::Gt:
      return a[0] + " > " + a[1];
    case ir::Op::Ge:
      return a[0] + " >= " + a[1];
    case ir::Op::Eq:
      return a[0] + " == " + a[1];
    case ir::Op::Ne:
      return a[0] + " != " + a[1];
    case ir::Op::And:
      return a[0] + " && " + a[1];
    case ir::Op::Or:
      return a[0] + " || " + a[1];
    case ir::Op::Where:
      return a[0] + " ? " + a[1] + " : " + a[2];
    default:
      return "0";
    }
  }

  /// Rounds a computed register value to its type (bf16 and f16 live in f32 registers).
  std::string rounded(ir::DType type, const std::string &expr) const {
    if (type == ir::DType::BF16)
      return "__bfloat162float(__float2bfloat16_rn(" + expr + "))";
    if (type == ir::DType::F16)
      return "__half2float(__float2half_rn(" + expr + "))";
    return expr;
  }

  bool vectorizedAccess(const std::vector<ir::DimId> &dims) const {
    return k_.vectorAccessesExact && !dims.empty() && dims.back() == k_.loops[k_.vectorLoop].root;
  }

  /// Index of the current element in a persistent buffer: registers are per thread;
  /// a shared-memory buffer interleaves the threads so neighbours use neighbouring banks.
  std::string bufferAt(const ir::Value &value, const std::string &linear) const {
    if (k_.persistentShared.count(value.id))
      return bufferName(value) + "[(" + linear + ") * fsl_threads + fsl_tid]";
    return bufferName(value) + "[" + linear + "]";
  }

  void writePhase(int p) {
    const kir::Phase &phase = k_.phases[p];
    out_ << "\n  // Phase " << p;
    if (p > 0)
      out_ << ": after the block reductions of phase " << p - 1;
    out_ << "\n";
    for (const ir::Value *reduction : phase.reductions) {
      double init = reduction->op == ir::Op::ReduceMax   ? -INFINITY
                    : reduction->op == ir::Op::ReduceMin ? INFINITY
                                                         : 0;
      out_ << "  " << cType(reduction->dtype) << " " << accName(*reduction) << " = "
           << literal(init, reduction->dtype) << ";  // " << ir::opName(reduction->op) << " of "
           << displayName(*reduction) << "\n";
    }
    bool unswitch = false;
    for (int loop : k_.serialLoops())
      unswitch |= k_.loops[loop].unswitched;
    std::string fastPath = inBoundsAtLastIteration();
    if (unswitch && !fastPath.empty()) {
      // unswitch: threads whose last iteration is in bounds skip every predicate.
      out_ << "  if (" << fastPath
           << ") {  // unswitch: no iteration of this thread is out of bounds\n";
      writeNest(p, false, "    ");
      out_ << "  } else {  // the predicated remainder\n";
      writeNest(p, true, "    ");
      out_ << "  }\n";
    } else {
      out_ << "  {\n";
      writeNest(p, true, "    ");
      out_ << "  }\n";
    }
    // Block reductions finish the phase's reductions for every thread.
    for (const ir::Value *reduction : phase.reductions) {
      std::string name = kir::valueName(*reduction), acc = accName(*reduction);
      std::string type = cType(reduction->dtype);
      std::string total = acc;
      if (k_.blockReduced.count(reduction->id)) {
        const char *combine = reduction->op == ir::Op::ReduceMax   ? "FslMax"
                              : reduction->op == ir::Op::ReduceMin ? "FslMin"
                                                                   : "FslSum";
        out_ << "  " << acc << " = fsl_block_reduce_x(" << acc << ", " << combine
             << "(), reinterpret_cast<" << type << "*>(fsl_shared), " << blockReductions_++ % 2
             << ");  // over threadIdx.x\n";
      }
      if (reduction->op == ir::Op::ReduceMean) {
        std::string count = "1";
        for (ir::DimId dim : reduction->reduced)
          count = count == "1" ? dimExtent(dim) : count + " * " + dimExtent(dim);
        total = acc + " / (" + type + ")(" + count + ")";
      }
      out_ << "  const " << type << " " << name << " = " << rounded(reduction->dtype, total)
           << ";  // " << displayName(*reduction) << "\n";
    }
  }

  /// Every inexact root is in bounds when this thread's serial loops are at their last
  /// iteration (indices grow with every loop, so then they are in bounds throughout).
  std::string inBoundsAtLastIteration() const {
    std::vector<std::string> conditions;
    for (ir::DimId root : k_.inexactRoots) {
      std::vector<std::string> terms;
      for (const kir::KernelLoop &loop : k_.loops) {
        if (loop.root != root)
          continue;
        std::string index = loop.parallel == Parallel::Serial
                                ? "(" + sizeExpr(*loop.extent.expr) + " - 1)"
                                : var(loop);
        std::string stride = sizeExpr(*loop.stride.expr);
        terms.push_back(stride == "1" ? index : index + " * " + stride);
      }
      conditions.push_back("(" + llvm::join(terms, " + ") + ") < " + dimExtent(root));
    }
    return llvm::join(conditions, " && ");
  }

  /// The serial loops of a phase and the element body, with or without predicates.
  void writeNest(int p, bool predicated, std::string indent) {
    bool rowGuard = predicated && openGuard(predicate(true, Checks::SameForThread),
                                            "  // this thread's row is in bounds", indent);
    writeLoops(p, predicated, indent);
    closeGuard(rowGuard, indent);
  }

  /// The serial loops of a phase and the element body; `predicated` checks, in every
  /// iteration, the bounds that change from one iteration to the next.
  void writeLoops(int p, bool predicated, std::string indent) {
    const kir::Phase &phase = k_.phases[p];
    std::vector<int> serial = k_.serialLoops();
    bool vector = k_.vectorLoop >= 0 && k_.vectorAccessesExact && !serial.empty() &&
                  serial.back() == k_.vectorLoop;
    std::vector<int> outer = serial;
    if (vector)
      outer.pop_back();
    // Index into the persistent buffer: the serial iterations, row-major (as the simulator).
    std::string linear = "0";
    for (size_t i = 0; i < serial.size(); ++i) {
      const kir::KernelLoop &l = k_.loops[serial[i]];
      linear = i == 0 ? var(l) : "(" + linear + ") * " + sizeExpr(*l.extent.expr) + " + " + var(l);
    }
    // Prefetch: when the batch loops are unrolled and short, every vector of the batch is
    // loaded before any is used, so all loads are in flight together (a store to an inout
    // tensor would otherwise order the next iteration's loads after it).
    std::vector<const ir::Value *> prefetched;
    std::string outerLinear = "0";
    int64_t outerCount = 1;
    bool prefetch = vector && !outer.empty();
    for (int loop : outer) {
      const kir::KernelLoop &l = k_.loops[loop];
      prefetch &= l.unrolled && l.extent.isStatic();
      if (l.extent.isStatic())
        outerCount *= *l.extent.value;
      outerLinear = outerLinear == "0"
                        ? var(l)
                        : "(" + outerLinear + ") * " + sizeExpr(*l.extent.expr) + " + " + var(l);
    }
    prefetch &= outerCount <= 32;
    if (prefetch) {
      for (const ir::Value *value : phase.values)
        if (value->op == ir::Op::Input && vectorizedAccess(f_.params[value->paramIndex].dims) &&
            !llvm::is_contained(k_.earlyInputs, value))
          prefetched.push_back(value);
      prefetch = !prefetched.empty();
    }
    if (prefetch) {
      const kir::KernelLoop &v = k_.loops[k_.vectorLoop];
      int64_t width = *v.extent.value;
      for (const ir::Value *value : prefetched) {
        const ir::Param &param = f_.params[value->paramIndex];
        out_ << indent << memoryType(param.dtype) << " " << kir::valueName(*value) << "_vec["
             << outerCount << "][" << width << "];  // prefetched: " << outerCount << " vectors of "
             << width << " x " << ir::dtypeName(param.dtype) << "\n";
      }
      std::string prefetchIndent = indent;
      for (int loop : outer) {
        const kir::KernelLoop &l = k_.loops[loop];
        out_ << prefetchIndent << "#pragma unroll\n"
             << prefetchIndent << "for (int64_t " << var(l) << " = 0; " << var(l) << " < "
             << sizeExpr(*l.extent.expr) << "; ++" << var(l) << ") {  // prefetch over " << l.name
             << "\n";
        prefetchIndent += "  ";
      }
      std::string loadGuard = predicated ? predicate(true, Checks::PerIteration) : "";
      if (!loadGuard.empty()) {
        out_ << prefetchIndent << "if (" << loadGuard << ") {\n";
        prefetchIndent += "  ";
      }
      for (const ir::Value *value : prefetched) {
        const ir::Param &param = f_.params[value->paramIndex];
        out_ << prefetchIndent << "fsl_load_vector<" << width * ir::dtypeBytes(param.dtype) << ">("
             << kir::valueName(*value) << "_vec[" << outerLinear << "], " << param.name << " + "
             << offsetOf(param.dims, true, true) << ");\n";
      }
      if (!loadGuard.empty()) {
        prefetchIndent.resize(prefetchIndent.size() - 2);
        out_ << prefetchIndent << "}\n";
      }
      for (size_t i = 0; i < outer.size(); ++i) {
        prefetchIndent.resize(prefetchIndent.size() - 2);
        out_ << prefetchIndent << "}\n";
      }
    }
    for (int loop : outer) {
      const kir::KernelLoop &l = k_.loops[loop];
      if (l.unrolled)
        out_ << indent << "#pragma unroll\n";
      out_ << indent << "for (int64_t " << var(l) << " = 0; " << var(l) << " < "
           << sizeExpr(*l.extent.expr) << "; ++" << var(l) << ") {  // "
           << (l.unrolled ? "unroll " : "serial ") << l.name << "\n";
      indent += "  ";
    }
    std::string guard = predicated ? predicate(vector, Checks::PerIteration) : "";
    if (!guard.empty()) {
      out_ << indent << "if (" << guard << ") {  // remainder of a non-divisible split\n";
      indent += "  ";
    }
    std::vector<std::string> vectorStores;
    if (vector) {
      const kir::KernelLoop &v = k_.loops[k_.vectorLoop];
      int64_t width = *v.extent.value;
      // Whole-vector loads before the vector loop.
      for (const ir::Value *value : phase.values) {
        if (value->op != ir::Op::Input || llvm::is_contained(prefetched, value) ||
            llvm::is_contained(k_.earlyInputs, value))
          continue;
        const ir::Param &param = f_.params[value->paramIndex];
        if (!vectorizedAccess(param.dims))
          continue;
        std::string name = kir::valueName(*value) + "_vec";
        out_ << indent << memoryType(param.dtype) << " " << name << "[" << width
             << "];  // vectorize " << v.name << ": " << width << " x "
             << ir::dtypeName(param.dtype) << " = " << width * ir::dtypeBytes(param.dtype)
             << " bytes\n";
        out_ << indent << "fsl_load_vector<" << width * ir::dtypeBytes(param.dtype) << ">(" << name
             << ", " << param.name << " + " << offsetOf(param.dims, true, true) << ");\n";
      }
      for (const ir::Output *output : phase.stores)
        if (vectorizedAccess(output->dims) && !ir::isReduction(output->value->op)) {
          out_ << indent << memoryType(output->dtype) << " " << output->name << "_vec[" << width
               << "];\n";
          vectorStores.push_back(output->name);
        }
      out_ << indent << "#pragma unroll\n";
      out_ << indent << "for (int64_t " << var(v) << " = 0; " << var(v) << " < " << width << "; ++"
           << var(v) << ") {  // vectorize " << v.name << "\n";
      indent += "  ";
    }
    // Element body.
    for (const ir::Value *value : phase.values) {
      if (onlyStored(*value, phase))
        continue; // the store rounds its operand (see storedValue)
      std::string name = kir::valueName(*value);
      int valuePhase = k_.phaseOf.at(value->id);
      std::string expr;
      if (ir::isReduction(value->op) && valuePhase < p) {
        continue; // the reduced value is a variable of the kernel already
      } else if (k_.persistent.count(value->id) && valuePhase < p) {
        expr = bufferAt(*value, linear);
      } else if (value->op == ir::Op::Input) {
        const ir::Param &param = f_.params[value->paramIndex];
        if (llvm::is_contained(k_.earlyInputs, value))
          expr = loadExpr(param.dtype, name + "_early[" + outerLinear + "]",
                          var(k_.loops[k_.vectorLoop]));
        else if (llvm::is_contained(prefetched, value))
          expr = loadExpr(param.dtype, name + "_vec[" + outerLinear + "]",
                          var(k_.loops[k_.vectorLoop]));
        else if (vector && vectorizedAccess(param.dims))
          expr = loadExpr(param.dtype, name + "_vec", var(k_.loops[k_.vectorLoop]));
        else
          expr = loadExpr(param.dtype, param.name, offsetOf(param.dims, false, true));
      } else if (value->op == ir::Op::Scalar) {
        expr = f_.params[value->paramIndex].name;
      } else if (value->op == ir::Op::Constant) {
        expr = literal(value->constant, value->dtype);
      } else if (value->op == ir::Op::Cast) {
        expr = rounded(value->dtype, "(" + std::string(cType(value->dtype)) + ")(" +
                                         kir::valueName(*value->operands[0]) + ")");
      } else {
        std::vector<std::string> args;
        for (const ir::Value *operand : value->operands)
          args.push_back(kir::valueName(*operand));
        expr = rounded(value->dtype, opExpr(*value, args));
      }
      out_ << indent << "const " << cType(value->dtype) << " " << name << " = " << expr << ";";
      if (!value->name.empty())
        out_ << "  // " << value->name;
      out_ << "\n";
    }
    for (const ir::Value *saved : phase.saves)
      out_ << indent << bufferAt(*saved, linear) << " = " << kir::valueName(*saved) << ";\n";
    for (const ir::Value *reduction : phase.reductions) {
      std::string acc = accName(*reduction), operand = kir::valueName(*reduction->operands[0]);
      if (reduction->op == ir::Op::ReduceMax)
        out_ << indent << acc << " = fsl_max(" << acc << ", " << operand << ");\n";
      else if (reduction->op == ir::Op::ReduceMin)
        out_ << indent << acc << " = fsl_min(" << acc << ", " << operand << ");\n";
      else
        out_ << indent << acc << " += " << operand << ";\n";
    }
    for (const ir::Output *output : phase.stores) {
      std::string value = kir::valueName(*storedValue(*output));
      if (vector && llvm::is_contained(vectorStores, output->name))
        out_ << indent << output->name << "_vec[" << var(k_.loops[k_.vectorLoop])
             << "] = " << storeValue(output->dtype, value) << ";\n";
      else
        out_ << indent << storeGuard(output->dims) << outputPointer(*output) << "["
             << offsetOf(output->dims, false) << "] = " << storeValue(output->dtype, value)
             << ";\n";
    }
    if (vector) {
      indent.resize(indent.size() - 2);
      out_ << indent << "}\n";
      int64_t width = *k_.loops[k_.vectorLoop].extent.value;
      for (const ir::Output *output : phase.stores)
        if (llvm::is_contained(vectorStores, output->name))
          out_ << indent << storeGuard(output->dims) << "fsl_store_vector<"
               << width * ir::dtypeBytes(output->dtype) << ">(" << outputPointer(*output) << " + "
               << offsetOf(output->dims, true) << ", " << output->name << "_vec);\n";
    }
    if (!guard.empty()) {
      indent.resize(indent.size() - 2);
      out_ << indent << "}\n";
    }
    for (size_t i = 0; i < outer.size(); ++i) {
      indent.resize(indent.size() - 2);
      out_ << indent << "}\n";
    }
  }

  /// The value a store converts: for an output that is a cast to its own type from f32
  /// (`bf16(...)`), the f32 value itself, so the store rounds once rather than twice.
  static const ir::Value *storedValue(const ir::Output &output) {
    const ir::Value *value = output.value;
    if (value->op == ir::Op::Cast && value->dtype == output.dtype &&
        (value->dtype == ir::DType::BF16 || value->dtype == ir::DType::F16) &&
        value->operands[0]->dtype == ir::DType::F32)
      return value->operands[0];
    return value;
  }

  /// A cast that only feeds stores which round its operand themselves.
  bool onlyStored(const ir::Value &value, const kir::Phase &phase) const {
    bool bypassed = false;
    for (const ir::Output *output : phase.stores)
      bypassed |= output->value == &value && storedValue(*output) != &value;
    if (!bypassed)
      return false;
    for (const auto &user : f_.values)
      if (llvm::is_contained(user->operands, &value))
        return false;
    for (const ir::Output &output : f_.outputs)
      if (output.value == &value && !llvm::is_contained(phase.stores, &output))
        return false;
    return true;
  }

  std::string outputPointer(const ir::Output &output) const {
    return output.isInout ? f_.params[output.paramIndex].name : output.name;
  }

  const kir::Kernel &k_;
  const ir::Fusion &f_;
  llvm::raw_ostream &out_;
  int64_t registersPerSm_;
  int blockReductions_ = 0; // emitted so far: they alternate between two scratch slots
};

const char *kPreamble =
    R"(// The kernels compile with nvcc and with NVRTC (fslc --emit=ptx|cubin, the runtime's JIT);
// the launcher below them is host code, left out under NVRTC.
#ifdef __CUDACC_RTC__
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
typedef int int32_t;
#else
#include "FUSION_HEADER"
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define FSL_INF32 __int_as_float(0x7f800000)
#define FSL_INF64 __longlong_as_double(0x7ff0000000000000LL)

// Whether T is f32 (outside the unnamed namespace: nvcc warns of unused members there).
template <typename T> struct FslIsF32 { static constexpr bool value = false; };
template <> struct FslIsF32<float> { static constexpr bool value = true; };

namespace {

// max and min that propagate NaN, like the reference: for f32 one instruction
// (max.NaN / min.NaN, sm_80 and later), else comparisons.
template <typename T> __device__ __forceinline__ T fsl_max(T a, T b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (FslIsF32<T>::value) {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
#endif
  return (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b);
}
template <typename T> __device__ __forceinline__ T fsl_min(T a, T b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (FslIsF32<T>::value) {
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
  }
#endif
  return (a != a || b != b) ? (a != a ? a : b) : (a < b ? a : b);
}
struct FslSum { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct FslMax { template <typename T> __device__ T operator()(T a, T b) const { return fsl_max(a, b); } };
struct FslMin { template <typename T> __device__ T operator()(T a, T b) const { return fsl_min(a, b); } };

// One 16-, 8-, 4- or 2-byte access.
template <int Bytes> struct FslVector;
template <> struct FslVector<16> { using type = uint4; };
template <> struct FslVector<8> { using type = uint2; };
template <> struct FslVector<4> { using type = uint32_t; };
template <> struct FslVector<2> { using type = uint16_t; };
template <int Bytes, typename T> __device__ __forceinline__ void fsl_load_vector(T *to, const T *from) {
  *reinterpret_cast<typename FslVector<Bytes>::type *>(to) =
      *reinterpret_cast<const typename FslVector<Bytes>::type *>(from);
}
template <int Bytes, typename T> __device__ __forceinline__ void fsl_store_vector(T *to, const T *from) {
  *reinterpret_cast<typename FslVector<Bytes>::type *>(to) =
      *reinterpret_cast<const typename FslVector<Bytes>::type *>(from);
}

extern __shared__ unsigned char fsl_shared[];

// A clamped row index: threads past the last row read it again (and store nothing).
__device__ __forceinline__ int64_t fsl_clamp_index(int64_t index, int64_t extent) {
  return index < extent ? index : extent - 1;
}

// Programmatic dependent launch (sm_90 and later): the launcher lets this grid start
// while the stream's previous kernel finishes. Wait for that kernel's memory before the
// first access, then let the next kernel start its own launch early. Without the launch
// attribute (or before sm_90) both are no-ops; -DFSL_PDL=0 leaves out both the
// instructions and the attribute.
#ifndef FSL_PDL
#define FSL_PDL 1
#endif
__device__ __forceinline__ void fsl_grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && FSL_PDL
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Reduces `value` over threadIdx.x for each (threadIdx.y, threadIdx.z) and gives every
// thread the result: serial partials (already in `value`) -> warp (shuffles) -> block: one
// partial per warp through shared memory, which every warp then combines with shuffles
// (a tree with bounds, right for any number of warps). Successive reductions alternate
// between two scratch slots, so none needs a barrier after it: the next reduction's
// barrier orders the reads of this one before the writes of the one after. Without whole
// warps a row, a pairwise tree in shared memory, exact for any blockDim.x.
template <typename T, typename Combine>
__device__ T fsl_block_reduce_x(T value, Combine combine, T *scratch, unsigned slot) {
  const unsigned row = threadIdx.z * blockDim.y + threadIdx.y;
  if (blockDim.x % 32 == 0) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
    if (blockDim.x == 32)
      return value; // a warp a row: every lane holds the total, no barrier needed
    const unsigned warps = blockDim.x / 32, lane = threadIdx.x % 32;
    T *partials = scratch + slot * (blockDim.y * blockDim.z * warps) + row * warps;
    if (lane == 0)
      partials[threadIdx.x / 32] = value;
    __syncthreads();
    T total = partials[lane % warps];
#pragma unroll
    for (unsigned offset = 16; offset > 0; offset >>= 1) {
      const T other = __shfl_down_sync(0xffffffffu, total, offset);
      if (lane + offset < warps)
        total = combine(total, other);
    }
    return __shfl_sync(0xffffffffu, total, 0);
  }
  const unsigned base = row * blockDim.x;
  __syncthreads(); // an earlier reduction's readers are done with the scratch
  scratch[base + threadIdx.x] = value;
  __syncthreads();
  for (unsigned step = 1; step < blockDim.x; step <<= 1) {
    if (threadIdx.x % (2 * step) == 0 && threadIdx.x + step < blockDim.x)
      scratch[base + threadIdx.x] = combine(scratch[base + threadIdx.x], scratch[base + threadIdx.x + step]);
    __syncthreads();
  }
  return scratch[base];
}

} // namespace
)";

int64_t sharedBytesPerThread(const kir::Kernel &kernel) {
  int64_t bytes = 8;
  for (unsigned id : kernel.persistentShared) {
    ir::DType type = kernel.fusion->values[id]->dtype;
    bytes += kernel.bufferElements * (type == ir::DType::F64 || type == ir::DType::I64 ? 8 : 4);
  }
  return bytes;
}

std::string guardCondition(const kir::Kernel &kernel) {
  std::vector<std::string> parts;
  for (const ast::SizeCondition &c : kernel.schedule->decl->when)
    parts.push_back(c.dim.text + " " + ast::binaryOpSpelling(c.op).str() + " " +
                    std::to_string(c.bound.value));
  return llvm::join(parts, " && ");
}

} // namespace

bool supportsProgrammaticLaunch(const std::string &arch) {
  llvm::StringRef digits = llvm::StringRef(arch).drop_front(arch.rfind('_') + 1);
  unsigned version = 0;
  digits.take_while(llvm::isDigit).getAsInteger(10, version);
  return version >= 90;
}

GeneratedSources generateCuda(const ir::Fusion &fusion,
                              const std::vector<const kir::Kernel *> &kernels,
                              const std::string &sourcePath, const CodegenOptions &options) {
  GeneratedSources result;
  std::string prefix = "fsl_" + fusion.name;

  // --- Header ---------------------------------------------------------------------
  std::vector<std::string> cParams, docs;
  for (const ir::Param &param : fusion.params) {
    std::string type = ir::typeString(fusion, param.dtype, param.dims);
    if (param.dims.empty()) {
      cParams.push_back(std::string(cType(param.dtype)) + " " + param.name);
      docs.push_back(
          " *   " + param.name + ": " + type + " scalar" +
          (param.defaultValue
               ? llvm::formatv(" (default {0})", llvm::format("%g", *param.defaultValue)).str()
               : ""));
    } else {
      cParams.push_back("const fsl_tensor *" + param.name);
      docs.push_back(" *   " + param.name + ": " + (param.isInout ? "inout " : "") + type +
                     ", contiguous (row-major)");
    }
  }
  for (const ir::Output &output : fusion.outputs)
    if (!output.isInout) {
      cParams.push_back("const fsl_tensor *" + output.name);
      docs.push_back(" *   " + output.name + ": output " +
                     ir::typeString(fusion, output.dtype, output.dims) +
                     ", contiguous (row-major)");
    }
  cParams.push_back("cudaStream_t stream");
  std::string signature = "fsl_status " + prefix + "(" + llvm::join(cParams, ", ") + ")";
  {
    llvm::raw_string_ostream h(result.header);
    std::string guard = "FSL_" + llvm::StringRef(fusion.name).upper() + "_H";
    h << "/* Generated by fslc from " << sourcePath << ": fusion " << fusion.name << ".\n *\n"
      << " * " << signature << "\n *\n * Parameters:\n"
      << llvm::join(docs, "\n") << "\n"
      << " *\n * Static dimensions: ";
    std::vector<std::string> statics, runtime;
    for (const ir::Dim &dim : fusion.dims)
      (dim.staticExtent ? statics : runtime)
          .push_back(dim.staticExtent ? dim.name + " = " + std::to_string(*dim.staticExtent)
                                      : dim.name);
    h << (statics.empty() ? "none" : llvm::join(statics, ", "))
      << "; runtime dimensions: " << (runtime.empty() ? "none" : llvm::join(runtime, ", "))
      << " (taken from the tensors' sizes).\n"
      << " * Every tensor is checked before launching; on an error nothing is launched or "
         "written,\n"
      << " * and " << prefix << "_error() says why.\n */\n"
      << "#ifndef " << guard << "\n#define " << guard << "\n\n#include \"fsl/runtime.h\"\n\n"
      << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      << signature << ";\n\n/* The message of the last error of " << prefix
      << " on this thread. */\n"
      << "const char *" << prefix << "_error(void);\n\n"
      << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  }

  // --- Source ---------------------------------------------------------------------
  llvm::raw_string_ostream s(result.source);
  std::string preamble = kPreamble;
  preamble.replace(preamble.find("FUSION_HEADER"), std::strlen("FUSION_HEADER"),
                   fusion.name + ".h");
  s << "// Generated by fslc from " << sourcePath << ": fusion " << fusion.name << ".\n"
    << "// Read it to tune the schedule; regenerate it rather than editing it.\n"
    << preamble << "\n";
  for (const kir::Kernel *kernel : kernels)
    KernelWriter(*kernel, s, options.registersPerSm).write();

  // Launcher: checks, variant choice, launch.
  s << "#ifndef __CUDACC_RTC__\n// ---- Host launcher ----\n\n";
  s << "namespace {\nthread_local char fsl_error_message[512];\n\n"
    << "fsl_status fsl_fail(fsl_status status, const char *format, ...) {\n"
    << "  va_list args;\n  va_start(args, format);\n"
    << "  vsnprintf(fsl_error_message, sizeof fsl_error_message, format, args);\n"
    << "  va_end(args);\n  return status;\n}\n\n"
    << "const char *fsl_dtype_name(fsl_dtype dtype) {\n"
    << "  static const char *names[] = {\"bool\", \"i32\", \"i64\", \"f16\", \"bf16\", \"f32\", "
       "\"f64\"};\n"
    << "  return dtype >= 0 && dtype <= 6 ? names[dtype] : \"unknown\";\n}\n\n"
    << "// Checks one tensor: pointer, type, rank, contiguity; sizes are checked by the caller.\n"
    << "fsl_status fsl_check_tensor(const fsl_tensor *t, const char *name, fsl_dtype dtype, int "
       "rank) {\n"
    << "  if (!t || !t->data)\n    return fsl_fail(FSL_ERROR_NULL_POINTER, \"%s: null tensor or "
       "data pointer\", name);\n"
    << "  if (t->dtype != dtype)\n    return fsl_fail(FSL_ERROR_DTYPE, \"%s: dtype %s, expected "
       "%s\", name, fsl_dtype_name(t->dtype), fsl_dtype_name(dtype));\n"
    << "  if (t->rank != rank)\n    return fsl_fail(FSL_ERROR_RANK, \"%s: rank %d, expected %d\", "
       "name, (int)t->rank, rank);\n"
    << "  int64_t expected = 1;\n"
    << "  for (int i = rank - 1; i >= 0; --i) {\n"
    << "    if (t->sizes[i] < 0)\n      return fsl_fail(FSL_ERROR_SIZE, \"%s: negative size %lld "
       "in dimension %d\", name, (long long)t->sizes[i], i);\n"
    << "    if (t->sizes[i] > 1 && t->strides[i] != expected)\n"
    << "      return fsl_fail(FSL_ERROR_LAYOUT, \"%s: stride %lld in dimension %d, expected %lld "
       "(contiguous row-major)\", name, (long long)t->strides[i], i, (long long)expected);\n"
    << "    expected *= t->sizes[i];\n  }\n  return FSL_OK;\n}\n\n"
    << "int64_t fsl_bytes(const fsl_tensor *t, int element_bytes) {\n"
    << "  int64_t n = element_bytes;\n  for (int i = 0; i < t->rank; ++i) n *= t->sizes[i];\n  "
       "return n;\n}\n\n"
    << "bool fsl_overlap(const fsl_tensor *a, int ab, const fsl_tensor *b, int bb) {\n"
    << "  const char *a0 = (const char *)a->data, *b0 = (const char *)b->data;\n"
    << "  return a0 < b0 + fsl_bytes(b, bb) && b0 < a0 + fsl_bytes(a, ab) && fsl_bytes(a, ab) > 0 "
       "&& fsl_bytes(b, bb) > 0;\n}\n"
    << "} // namespace\n\n";
  s << "extern \"C\" const char *" << prefix << "_error(void) { return fsl_error_message; }\n\n";
  s << "extern \"C\" " << signature << " {\n  fsl_status status;\n";
  // Per-tensor checks.
  struct TensorRef {
    std::string name;
    ir::DType dtype;
    std::vector<ir::DimId> dims;
    bool written;
    bool inout;
  };
  std::vector<TensorRef> tensors;
  for (const ir::Param &param : fusion.params)
    if (!param.dims.empty())
      tensors.push_back({param.name, param.dtype, param.dims, param.isInout, param.isInout});
  for (const ir::Output &output : fusion.outputs)
    if (!output.isInout)
      tensors.push_back({output.name, output.dtype, output.dims, true, false});
  for (const TensorRef &t : tensors)
    s << "  if ((status = fsl_check_tensor(" << t.name << ", \"" << t.name << "\", "
      << runtimeDType(t.dtype) << ", " << t.dims.size() << ")) != FSL_OK)\n    return status;\n";
  // Sizes: the first tensor with a dimension defines it; static ones must match.
  for (ir::DimId dim = 0; dim < fusion.dims.size(); ++dim) {
    const ir::Dim &d = fusion.dims[dim];
    bool defined = false;
    for (const TensorRef &t : tensors)
      for (size_t i = 0; i < t.dims.size(); ++i) {
        if (t.dims[i] != dim)
          continue;
        std::string size = t.name + "->sizes[" + std::to_string(i) + "]";
        if (!defined && !d.staticExtent) {
          s << "  const int64_t " << d.name << " = " << size << ";\n";
          defined = true;
          continue;
        }
        std::string expected = d.staticExtent ? std::to_string(*d.staticExtent) : d.name;
        s << "  if (" << size << " != " << expected << ")\n    return fsl_fail(FSL_ERROR_SIZE, \""
          << t.name << ": size %lld of dimension " << d.name << ", expected %lld"
          << (d.staticExtent ? " (static)" : "") << "\", (long long)" << size << ", (long long)"
          << expected << ");\n";
      }
  }
  // Alignment of vector accesses.
  std::set<std::string> aligned;
  for (const kir::Kernel *kernel : kernels) {
    if (kernel->vectorLoop < 0 || !kernel->vectorAccessesExact)
      continue;
    const kir::KernelLoop &v = kernel->loops[kernel->vectorLoop];
    for (const TensorRef &t : tensors)
      if (!t.dims.empty() && t.dims.back() == v.root && aligned.insert(t.name).second) {
        int64_t bytes = *v.extent.value * ir::dtypeBytes(t.dtype);
        s << "  if ((uintptr_t)" << t.name << "->data % " << bytes
          << " != 0)\n    return fsl_fail(FSL_ERROR_ALIGNMENT, \"" << t.name
          << ": data pointer %p is not aligned to " << bytes << " bytes (the kernel reads " << bytes
          << "-byte vectors)\", " << t.name << "->data);\n";
      }
  }
  // Outputs may not overlap other tensors (an inout parameter is its own output).
  for (size_t i = 0; i < tensors.size(); ++i)
    for (size_t j = 0; j < tensors.size(); ++j) {
      if (i == j || !tensors[i].written || (tensors[j].written && j < i))
        continue;
      s << "  if (fsl_overlap(" << tensors[i].name << ", " << ir::dtypeBytes(tensors[i].dtype)
        << ", " << tensors[j].name << ", " << ir::dtypeBytes(tensors[j].dtype)
        << "))\n    return fsl_fail(FSL_ERROR_OVERLAP, \"" << tensors[i].name << " overlaps "
        << tensors[j].name << " in memory; only inout parameters are updated in place\");\n";
    }
  // Empty tensors: nothing to do.
  std::vector<std::string> empty;
  for (const ir::Dim &d : fusion.dims)
    if (!d.staticExtent)
      empty.push_back(d.name + " == 0");
  if (!empty.empty())
    s << "  if (" << llvm::join(empty, " || ") << ")\n    return FSL_OK;\n";
  // Variant choice and launch.
  for (const kir::Kernel *kernel : kernels) {
    std::string condition = guardCondition(*kernel);
    s << "  " << (condition.empty() ? "{" : "if (" + condition + ") {") << "  // " << kernel->name
      << "\n";
    std::string grid[3] = {"1", "1", "1"}, block[3] = {"1", "1", "1"};
    for (const kir::KernelLoop &loop : kernel->loops) {
      auto text = [&](const sched::SizeExpr &e) { return sizeText(e, fusion); };
      if (sched::isBlockIndex(loop.parallel))
        grid[static_cast<int>(loop.parallel) - static_cast<int>(Parallel::BIDx)] =
            text(*loop.extent.expr);
      if (sched::isThreadIndex(loop.parallel))
        block[static_cast<int>(loop.parallel) - static_cast<int>(Parallel::TIDx)] =
            text(*loop.extent.expr);
    }
    s << "    const dim3 grid((unsigned)" << grid[0] << ", (unsigned)" << grid[1] << ", (unsigned)"
      << grid[2] << ");\n"
      << "    const dim3 block((unsigned)" << block[0] << ", (unsigned)" << block[1]
      << ", (unsigned)" << block[2] << ");\n"
      << "    // Block reduction scratch (8 bytes a thread), then persistent buffers in shared "
         "memory.\n"
      << "    const size_t shared_bytes = (size_t)block.x * block.y * block.z * "
      << sharedBytesPerThread(*kernel) << ";\n"
      << "    if (shared_bytes > 48 * 1024) {\n"
      << "      const cudaError_t opt_in = cudaFuncSetAttribute(" << kernel->name
      << ", cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared_bytes);\n"
      << "      if (opt_in != cudaSuccess)\n        return fsl_fail(FSL_ERROR_LAUNCH, \""
      << kernel->name
      << ": %zu bytes of shared memory: %s\", shared_bytes, cudaGetErrorString(opt_in));\n    }\n";
    if (options.programmaticDependentLaunch)
      s << "    // Programmatic dependent launch: the grid may start while the stream's previous "
           "kernel\n"
        << "    // finishes (the kernel waits for its memory first). -DFSL_PDL=0 turns it off.\n"
        << "    cudaLaunchAttribute attributes[1];\n"
        << "    attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;\n"
        << "    attributes[0].val.programmaticStreamSerializationAllowed = FSL_PDL;\n"
        << "    cudaLaunchConfig_t config = {};\n"
        << "    config.gridDim = grid;\n    config.blockDim = block;\n"
        << "    config.dynamicSmemBytes = shared_bytes;\n    config.stream = stream;\n"
        << "    config.attrs = attributes;\n    config.numAttrs = 1;\n"
        << "    const cudaError_t launched = cudaLaunchKernelEx(&config, " << kernel->name << ", ";
    else
      s << "    " << kernel->name << "<<<grid, block, shared_bytes, stream>>>(";
    std::vector<std::string> args;
    for (const ir::Param &param : fusion.params)
      args.push_back(param.dims.empty()
                         ? param.name
                         : "(" + std::string(param.isInout ? "" : "const ") +
                               memoryType(param.dtype) + " *)" + param.name + "->data");
    for (const ir::Output &output : fusion.outputs)
      if (!output.isInout)
        args.push_back("(" + std::string(memoryType(output.dtype)) + " *)" + output.name +
                       "->data");
    for (const ir::Dim &dim : fusion.dims)
      if (!dim.staticExtent)
        args.push_back(dim.name);
    s << llvm::join(args, ", ") << ");\n"
      << "    const cudaError_t error = "
      << (options.programmaticDependentLaunch ? "launched != cudaSuccess ? launched : " : "")
      << "cudaGetLastError();\n"
      << "    if (error != cudaSuccess)\n      return fsl_fail(FSL_ERROR_LAUNCH, \"" << kernel->name
      << ": %s\", cudaGetErrorString(error));\n    return FSL_OK;\n  }\n";
    if (condition.empty())
      break;
  }
  s << "  return fsl_fail(FSL_ERROR_SIZE, \"no schedule of " << fusion.name
    << " applies to these sizes\");\n}\n"
    << "#endif // __CUDACC_RTC__\n";
  return result;
}

} // namespace fsl::codegen
