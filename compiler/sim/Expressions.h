// Expressions.h — Kernel IR expressions evaluated as the CUDA printer's code computes them
// (Simulator.h, "Arithmetic"), in a scope that supplies variables and loads: one thread of
// a block (Interpreter::ThreadScope), or the launch (LaunchScope).
#pragma once

#include "kir/IR.h"
#include "sim/Fault.h"

#include <map>

namespace fsl::sim {

/// Where an expression reads its variables and buffers: one thread of a block, or the
/// launch (runtime dimensions and scalars only).
class Scope {
public:
  virtual ~Scope() = default;
  virtual double variable(const kir::Var &v) = 0;
  virtual double load(const kir::Buffer &buffer, int64_t index) = 0;
};

/// The value of `e` in `scope`; a fault (unlocated) for what the GPU would not compute.
double evaluate(const kir::ExprNode &e, Scope &scope);

/// `value` as an int64, which it must be exactly; `what` names it in the fault.
int64_t exactInteger(double value, const char *what);

/// A value held in a variable of `type`: the C type the printer declares it with
/// (codegen's cType), where bf16 and f16 are `float`. Assigning to it converts to that
/// type and rounds no further: a bf16 variable given an f32 value keeps the f32 value, a
/// bf16 constant is the f32 literal the printer writes, a bf16 accumulator adds in f32.
double inRegister(double value, kir::DType type);

/// The launch's scope: runtime dimensions and scalar parameters.
class LaunchScope : public Scope {
public:
  explicit LaunchScope(const std::map<const kir::Var *, double> &scalars) : scalars_(scalars) {}
  double variable(const kir::Var &v) override {
    if (v.builtin != kir::Builtin::None)
      fail("a launch expression reads the hardware index " + v.name);
    auto it = scalars_.find(&v);
    if (it == scalars_.end())
      fail("a launch expression reads " + v.name + ", which has no value at launch");
    return it->second;
  }
  double load(const kir::Buffer &buffer, int64_t) override {
    fail("a launch expression loads from " + buffer.name);
  }

private:
  const std::map<const kir::Var *, double> &scalars_;
};

} // namespace fsl::sim
