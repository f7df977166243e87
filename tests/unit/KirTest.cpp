// KirTest.cpp — the Kernel IR statement table (kir/Stmt.def) against the code built from
// it: for every kind, a node built by its typed constructor with every field the kind uses
// set to a marker of its own (expressions are distinct variables, children distinct
// statements) is walked by Visitor, rebuilt by a Mutator that replaces every marker,
// substituted, and verified; a node that sets a field its kind does not use is refused.
#include "kir/IR.h"
#include "kir/Mutator.h"
#include "kir/Verifier.h"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <type_traits>

using namespace fsl;
using namespace fsl::kir;

namespace {

template <typename> constexpr bool unsupportedType = false;

/// The markers of one node: what each field of its kind was set to.
struct Markers {
  StmtKind kind = StmtKind::Block;
  std::vector<VarPtr> exprVars;  // a variable for each expression slot
  std::vector<VarPtr> boundVars; // the Var and Vars fields
  std::vector<BufferPtr> buffers;
  std::vector<Stmt> children;

  std::string name(StmtField field, int i = 0) const {
    return stmtKindName(kind).str() + "." + stmtFieldName(field).str() + "." + std::to_string(i);
  }

  Expr exprMarker(StmtField field, int i = 0) {
    // An If's condition is a boolean (the verifier checks it); other slots are integers.
    DType type = field == StmtField::condition ? DType::Bool : DType::I64;
    exprVars.push_back(makeVar(name(field, i), type));
    return var(exprVars.back());
  }

  BufferPtr bufferMarker(StmtField field) {
    auto b = std::make_shared<Buffer>();
    b->name = name(field);
    b->dtype = DType::F32;
    b->space = MemorySpace::Shared;
    b->shape = {64};
    b->swizzle = Swizzle::Bytes128;    // wgmma's M/N-major operands need one
    if (kind == StmtKind::AtomicAdd) { // a global i32 counter, its old value an i32 (verified)
      b->dtype = DType::I32;
      if (field == StmtField::source)
        b->space = MemorySpace::Global;
    }
    if (kind == StmtKind::StMatrix) { // 16-bit registers into shared memory (verified)
      b->dtype = DType::BF16;
      if (field == StmtField::source)
        b->space = MemorySpace::Local;
    }
    buffers.push_back(b);
    return b;
  }

  /// A value of type T, not its default, standing for `field`.
  template <typename T> T make(StmtField field) {
    if constexpr (std::is_same_v<T, Expr>) {
      return exprMarker(field);
    } else if constexpr (std::is_same_v<T, std::vector<Expr>>) {
      return {exprMarker(field, 0), exprMarker(field, 1)};
    } else if constexpr (std::is_same_v<T, TensorMapPtr>) {
      auto map = std::make_shared<TensorMap>();
      map->name = name(field);
      map->global = bufferMarker(StmtField::tensorMap);
      map->extents = {exprMarker(field, 0), exprMarker(field, 1)};
      map->box = {8, 8}; // as many as the coordinates
      map->swizzle = Swizzle::Bytes128;
      return map;
    } else if constexpr (std::is_same_v<T, std::vector<Stmt>>) {
      // A loop and a warp role have one child; an if has then and else.
      int n = kind == StmtKind::If || kind == StmtKind::Block ? 2 : 1;
      std::vector<Stmt> body;
      for (int i = 0; i < n; ++i) {
        children.push_back(comment(name(field, i)));
        body.push_back(children.back());
      }
      return body;
    } else if constexpr (std::is_same_v<T, BufferPtr>) {
      return bufferMarker(field);
    } else if constexpr (std::is_same_v<T, VarPtr>) {
      boundVars.push_back(makeVar(name(field), DType::I64));
      return boundVars.back();
    } else if constexpr (std::is_same_v<T, std::vector<VarPtr>>) {
      boundVars.push_back(makeVar(name(field), DType::I64));
      return {boundVars.back()}; // Reduce: the index of an argmax
    } else if constexpr (std::is_same_v<T, std::string>) {
      return name(field);
    } else if constexpr (std::is_same_v<T, bool>) {
      return true;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      if (kind == StmtKind::StMatrix)
        return 4; // stmatrix's matrices: 1, 2 or 4 (verified)
      return 16;  // a lane count, a wgmma block distance (a multiple of 16), ...
    } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
      return 4;
    } else if constexpr (std::is_same_v<T, LoopKind>) {
      return LoopKind::Unrolled;
    } else if constexpr (std::is_same_v<T, Axis>) {
      return Axis::TIDy;
    } else if constexpr (std::is_same_v<T, ReduceKind>) {
      return ReduceKind::ArgMax; // two accumulators: the Vars field has one
    } else if constexpr (std::is_same_v<T, ReduceScope>) {
      return ReduceScope::Warp;
    } else if constexpr (std::is_same_v<T, BarrierKind>) {
      return BarrierKind::Named;
    } else if constexpr (std::is_same_v<T, GridDependencyOp>) {
      return GridDependencyOp::Wait;
    } else if constexpr (std::is_same_v<T, WgmmaShape>) {
      return WgmmaShape{64, 128, 16};
    } else if constexpr (std::is_same_v<T, DType>) {
      return DType::F16;
    } else {
      static_assert(unsupportedType<T>, "a field type without a marker: add one here");
    }
  }
};

/// A node of every kind, built by its typed constructor from markers.
struct Sample {
  Markers markers;
  Stmt node;
};

std::vector<Sample> samples() {
  std::vector<Sample> result;
#define FSL_MARKER(Field) m.make<decltype(StmtNode::Field)>(StmtField::Field)
#define STMT_KIND(Kind, PrintedName, Constructor, ...)                                             \
  {                                                                                                \
    Markers m;                                                                                     \
    m.kind = StmtKind::Kind;                                                                       \
    Stmt node = Constructor(FSL_FOR_EACH_LIST(FSL_MARKER, __VA_ARGS__));                           \
    result.push_back({std::move(m), std::move(node)});                                             \
  }
#include "kir/Stmt.def"
#undef FSL_MARKER
  return result;
}

/// A kernel in which `node` is well formed: its variables and buffers are parameters, the
/// accumulators of Assign and Reduce are declared, and it is launched as a cluster (for a
/// remote arrival and a multicast).
Kernel kernelAround(const Stmt &node, const Markers &m) {
  Kernel kernel;
  kernel.name = "k";
  for (const VarPtr &v : m.exprVars) {
    KernelParam p;
    p.kind = KernelParam::Kind::Scalar;
    p.var = v;
    kernel.params.push_back(p);
  }
  for (const BufferPtr &b : m.buffers) {
    KernelParam p;
    p.kind = KernelParam::Kind::Tensor;
    p.buffer = b;
    kernel.params.push_back(p);
  }
  std::vector<Stmt> body;
  if (m.kind == StmtKind::Assign || m.kind == StmtKind::Reduce)
    for (const VarPtr &v : m.boundVars)
      body.push_back(declare(v, index(0)));
  body.push_back(node);
  kernel.body = blockStmt(std::move(body)); // not flattened: a Block node stays itself
  kernel.launch.grid = {index(2), index(1), index(1)};
  kernel.launch.block = {index(128), index(1), index(1)};
  kernel.launch.cluster = {index(2), index(1), index(1)};
  return kernel;
}

/// What a rewrite replaced: variables by others, statements by others.
struct Replacements {
  std::map<const Var *, VarPtr> vars;
  std::map<const StmtNode *, Stmt> stmts;
};

Replacements replacementsOf(const Markers &m, bool statements) {
  Replacements r;
  for (const VarPtr &v : m.exprVars)
    r.vars[v.get()] = makeVar(v->name + "'", v->dtype);
  if (statements)
    for (const Stmt &child : m.children)
      r.stmts[child.get()] = comment(child->comment + "'");
  return r;
}

class ReplaceMarkers : public Mutator {
public:
  explicit ReplaceMarkers(const Replacements &r) : r_(r) {}
  Expr mutate(const Expr &e) override {
    if (e->kind == ExprKind::Var)
      if (auto found = r_.vars.find(e->var.get()); found != r_.vars.end())
        return var(found->second);
    return mutateChildren(e);
  }
  Stmt mutate(const Stmt &s) override {
    if (auto found = r_.stmts.find(s.get()); found != r_.stmts.end())
      return found->second;
    return mutateChildren(s);
  }

private:
  const Replacements &r_;
};

void expectReplacedExpr(const char *field, const Expr &before, const Expr &after,
                        const Replacements &r) {
  INFO("field " << std::string(field));
  if (!before) {
    CHECK(!after);
    return;
  }
  REQUIRE(after);
  REQUIRE(before->kind == ExprKind::Var);
  REQUIRE(after->kind == ExprKind::Var);
  auto found = r.vars.find(before->var.get());
  REQUIRE(found != r.vars.end());
  CHECK(after->var == found->second);
}

/// `after` is `before` with every marker replaced as `r` says, and nothing else changed.
template <StmtFieldRole role, typename T>
void expectField(const char *field, const T &before, const T &after, const Replacements &r) {
  INFO("field " << std::string(field));
  if constexpr (role == StmtFieldRole::Common) {
    // The annotations: not walked, not compared (an Origin has no ==).
  } else if constexpr (role == StmtFieldRole::Expr) {
    expectReplacedExpr(field, before, after, r);
  } else if constexpr (role == StmtFieldRole::Exprs) {
    REQUIRE(before.size() == after.size());
    for (size_t i = 0; i < before.size(); ++i)
      expectReplacedExpr(field, before[i], after[i], r);
  } else if constexpr (role == StmtFieldRole::TensorMap) {
    if (!before) {
      CHECK(!after);
      return;
    }
    REQUIRE(after);
    CHECK(after->name == before->name);
    CHECK(after->box == before->box);
    CHECK(after->global == before->global);
    REQUIRE(before->extents.size() == after->extents.size());
    for (size_t i = 0; i < before->extents.size(); ++i)
      expectReplacedExpr(field, before->extents[i], after->extents[i], r);
  } else if constexpr (role == StmtFieldRole::Stmts) {
    REQUIRE(before.size() == after.size());
    for (size_t i = 0; i < before.size(); ++i) {
      auto found = r.stmts.find(before[i].get());
      CHECK(after[i] == (found != r.stmts.end() ? found->second : before[i]));
    }
  } else {
    CHECK(before == after); // buffers, variables and attributes are kept
  }
}

/// A field holds a marker (not its default) exactly when its kind uses it.
template <StmtFieldRole role, typename T>
void expectSetIfUsed(const char *field, const T &value, const T &initial, bool used) {
  if constexpr (role != StmtFieldRole::Common) {
    INFO("field " << std::string(field));
    CHECK((value == initial) != used);
  }
}

void expectReplaced(const StmtNode &before, const StmtNode &after, const Replacements &r) {
  CHECK(after.kind == before.kind);
#define STMT_FIELD(Name, Type, Default, Role)                                                      \
  expectField<StmtFieldRole::Role>(#Name, before.Name, after.Name, r);
#include "kir/Stmt.def"
}

/// `s` with `field` set to a marker (not its default).
Stmt withFieldSet(const Stmt &s, StmtField field) {
  auto copy = std::make_shared<StmtNode>(*s);
  Markers m;
  m.kind = s->kind;
  switch (field) {
#define STMT_FIELD(Name, Type, Default, Role)                                                      \
  case StmtField::Name:                                                                            \
    if constexpr (StmtFieldRole::Role != StmtFieldRole::Common)                                    \
      copy->Name = m.make<Type>(field);                                                            \
    break;
#include "kir/Stmt.def"
  }
  return copy;
}

std::vector<StmtField> allFields() {
  return {
#define STMT_FIELD(Name, Type, Default, Role) StmtField::Name,
#include "kir/Stmt.def"
  };
}

} // namespace

TEST_CASE("kir table: every kind has a name and every field a kind that uses it") {
  std::set<std::string> names;
  for (const Sample &sample : samples())
    CHECK(names.insert(stmtKindName(sample.node->kind).str()).second);
  CHECK(names.size() == samples().size());
  for (StmtField field : allFields()) {
    if (stmtFieldRole(field) == StmtFieldRole::Common)
      continue;
    bool used = false;
    for (const Sample &sample : samples())
      used |= stmtKindUses(sample.node->kind, field);
    INFO("field " << stmtFieldName(field).str());
    CHECK(used);
  }
}

TEST_CASE("kir table: the typed constructors build the kind from its fields") {
  for (const Sample &sample : samples()) {
    INFO("kind " << stmtKindName(sample.markers.kind).str());
    CHECK(sample.node->kind == sample.markers.kind);
    // Every field the kind uses holds its marker; every other one its default.
    static const StmtNode defaults;
#define STMT_FIELD(Name, Type, Default, Role)                                                      \
  expectSetIfUsed<StmtFieldRole::Role>(#Name, sample.node->Name, defaults.Name,                    \
                                       stmtKindUses(sample.node->kind, StmtField::Name));
#include "kir/Stmt.def"
  }
}

TEST_CASE("kir table: Visitor visits every expression and child of every kind") {
  for (const Sample &sample : samples()) {
    INFO("kind " << stmtKindName(sample.markers.kind).str());
    std::set<const Var *> seenVars;
    std::set<const StmtNode *> seenStmts;
    forEachExpr(sample.node, [&](const Expr &e) {
      if (e->kind == ExprKind::Var)
        seenVars.insert(e->var.get());
    });
    forEachStmt(sample.node, [&](const Stmt &s) { seenStmts.insert(s.get()); });
    for (const VarPtr &v : sample.markers.exprVars) {
      INFO("marker " << v->name);
      CHECK(seenVars.count(v.get()));
    }
    for (const Stmt &child : sample.markers.children) {
      INFO("child " << child->comment);
      CHECK(seenStmts.count(child.get()));
    }
  }
}

TEST_CASE("kir table: a Mutator rebuilds every kind with every marker replaced") {
  for (const Sample &sample : samples()) {
    INFO("kind " << stmtKindName(sample.markers.kind).str());
    Replacements r = replacementsOf(sample.markers, /*statements=*/true);
    Stmt rebuilt = ReplaceMarkers(r).mutate(sample.node);
    bool hasMarkers = !sample.markers.exprVars.empty() || !sample.markers.children.empty();
    CHECK((rebuilt != sample.node) == hasMarkers);
    expectReplaced(*sample.node, *rebuilt, r);
    // A Mutator that replaces nothing keeps the node (and its tensor map) shared.
    Replacements none;
    CHECK(ReplaceMarkers(none).mutate(sample.node) == sample.node);
  }
}

TEST_CASE("kir table: substitute reaches every expression of every kind") {
  for (const Sample &sample : samples()) {
    INFO("kind " << stmtKindName(sample.markers.kind).str());
    Replacements r = replacementsOf(sample.markers, /*statements=*/false);
    Stmt substituted = substitute(sample.node, [&](const VarPtr &v) -> Expr {
      auto found = r.vars.find(v.get());
      return found != r.vars.end() ? var(found->second) : nullptr;
    });
    expectReplaced(*sample.node, *substituted, r);
  }
}

TEST_CASE("kir table: the verifier accepts every kind with its fields set") {
  for (const Sample &sample : samples()) {
    INFO("kind " << stmtKindName(sample.markers.kind).str());
    CHECK(verifyKernel(kernelAround(sample.node, sample.markers)) == "");
  }
}

TEST_CASE("kir table: the verifier refuses a field the kind does not use") {
  for (const Sample &sample : samples()) {
    for (StmtField field : allFields()) {
      if (stmtKindUses(sample.markers.kind, field))
        continue;
      std::string fieldName = stmtFieldName(field).str();
      INFO("kind " << stmtKindName(sample.markers.kind).str() << ", field " << fieldName);
      std::string message =
          verifyKernel(kernelAround(withFieldSet(sample.node, field), sample.markers));
      // A CTA rank or a multicast mask is refused first by the cluster rules, in their words.
      std::string expected = field == StmtField::ctaRank         ? "CTA rank"
                             : field == StmtField::multicastMask ? "multicast mask"
                                                                 : "'" + fieldName + "'";
      CHECK(message.find(expected) != std::string::npos);
    }
  }
}
