// OnePass.cpp — recognition of softmax's and LayerNorm's reduction pairs.
#include "ir/OnePass.h"

#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <set>

namespace fsl::ir {
namespace {

/// `value` without the float casts that widen it exactly (bf16/f16 -> f32 -> f64).
const Value *withoutWidening(const Value *value) {
  auto rank = [](DType type) {
    return type == DType::F64                          ? 3
           : type == DType::F32                        ? 2
           : type == DType::BF16 || type == DType::F16 ? 1
                                                       : 0;
  };
  while (value->op == Op::Cast && value->operands.size() == 1 && isFloat(value->dtype) &&
         isFloat(value->operands[0]->dtype) && rank(value->operands[0]->dtype) < rank(value->dtype))
    value = value->operands[0];
  return value;
}

bool sameReduced(const Value &a, const Value &b) {
  std::vector<DimId> x = a.reduced, y = b.reduced;
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

/// The accumulators' type for values of `type`: f32 or f64 only (a bf16 or f16 exp or
/// square rounds each element, which one pass would not reproduce).
bool accumulatorType(DType type, DType &out) {
  if (type != DType::F32 && type != DType::F64)
    return false;
  out = type;
  return true;
}

} // namespace

std::vector<OnePassPair> findOnePassPairs(const Fusion &fusion) {
  std::vector<OnePassPair> pairs;
  std::set<const Value *> taken;
  for (const auto &owned : fusion.values) {
    const Value *second = owned.get();
    if ((second->op != Op::ReduceSum && second->op != Op::ReduceMean) || taken.count(second))
      continue;
    const Value *body = second->operands[0];
    OnePassPair pair;
    pair.second = second;
    if (body->op == Op::Exp && body->operands[0]->op == Op::Sub) {
      // sum(exp(a - max(a, over D)), over D)
      const Value *sub = body->operands[0];
      const Value *first = withoutWidening(sub->operands[1]);
      if (first->op != Op::ReduceMax || !sameReduced(*first, *second) || taken.count(first) ||
          !isFloat(first->operands[0]->dtype) ||
          withoutWidening(sub->operands[0]) != withoutWidening(first->operands[0]) ||
          !accumulatorType(body->dtype, pair.accumulator) || second->dtype != body->dtype)
        continue;
      pair.kind = OnePassKind::MaxExpSum;
      pair.first = first;
      pair.operand = first->operands[0];
    } else if (body->op == Op::Mul && body->operands[0] == body->operands[1] &&
               body->operands[0]->op == Op::Sub) {
      // mean((a - mean(a, over D))^2, over D), the square as d * d
      const Value *sub = body->operands[0];
      const Value *first = withoutWidening(sub->operands[1]);
      if (first->op != Op::ReduceMean || !sameReduced(*first, *second) || taken.count(first) ||
          !isFloat(first->operands[0]->dtype) ||
          withoutWidening(sub->operands[0]) != withoutWidening(first->operands[0]) ||
          !accumulatorType(body->dtype, pair.accumulator) || second->dtype != body->dtype ||
          first->dtype != body->dtype)
        continue;
      pair.kind = OnePassKind::Welford;
      pair.first = first;
      pair.operand = first->operands[0];
    } else {
      continue;
    }
    taken.insert(pair.first);
    taken.insert(second);
    pairs.push_back(pair);
  }
  return pairs;
}

std::vector<OnePassAccumulator> onePassAccumulators(const OnePassPair &pair) {
  if (pair.kind == OnePassKind::MaxExpSum)
    return {{pair.first, "_max", "maximum"}, {pair.second, "_sum", "sum of exp(x - maximum)"}};
  return {{pair.first, "_count", "count"},
          {pair.first, "_mean", "mean"},
          {pair.second, "_m2", "sum of squared differences from the mean"}};
}

std::set<unsigned> absorbedValueIds(const Fusion &fusion) {
  std::set<unsigned> absorbed;
  // Whether `value`'s only reader is `reader` (and no output stores it).
  auto onlyReadBy = [&](const Value *value, const Value *reader) {
    for (const Output &output : fusion.outputs)
      if (output.value == value)
        return false;
    for (const auto &user : fusion.values)
      if (user.get() != reader && llvm::is_contained(user->operands, value))
        return false;
    return true;
  };
  for (const OnePassPair &pair : findOnePassPairs(fusion)) {
    const Value *body = pair.second->operands[0]; // exp(a - first), or d * d
    const Value *difference = body->operands[0];  // a - first
    if (onlyReadBy(body, pair.second))
      absorbed.insert(body->id);
    if (onlyReadBy(difference, body))
      absorbed.insert(difference->id);
  }
  return absorbed;
}

int64_t reductionScratchBytesPerThread(const Fusion &fusion, bool onePass) {
  int64_t bytes = reductionScratchBytesPerThread(fusion);
  if (!onePass)
    return bytes;
  for (const OnePassPair &pair : findOnePassPairs(fusion)) {
    int64_t element = pair.accumulator == DType::F64 ? 8 : 4;
    int64_t size = element * (pair.kind == OnePassKind::Welford ? 3 : 2);
    bytes = std::max(bytes, (size + 7) / 8 * 8);
  }
  return bytes;
}

} // namespace fsl::ir
