// FromAst.cpp — one conversion per directive kind; the `= auto` kind and knob checks.
#include "schedule/FromAst.h"

#include "ast/AST.h"
#include "heuristics/Family.h"
#include "schedule/ScheduleBuilder.h"
#include "support/Diagnostics.h"
#include "support/Internal.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/MathExtras.h>

#include <map>

namespace fsl::sched {
namespace {

Name nameOf(const ast::Name &name) { return {name.text, name.range}; }

Count countOf(const ast::IntLiteral &literal) { return {literal.value, literal.range}; }

std::vector<Count> countsOf(const ast::IntTuple &tuple) {
  std::vector<Count> counts;
  for (const ast::IntLiteral &literal : tuple.values)
    counts.push_back(countOf(literal));
  return counts;
}

LoopRef loopOf(const ast::DimRef &ref) {
  LoopRef loop;
  if (ref.tensor)
    loop.tensor = nameOf(*ref.tensor);
  loop.loop = nameOf(ref.dim);
  loop.range = ref.range;
  return loop;
}

Parallel parallelOf(ast::ParallelType type) {
  switch (type) {
  case ast::ParallelType::BIDx:
    return Parallel::BIDx;
  case ast::ParallelType::BIDy:
    return Parallel::BIDy;
  case ast::ParallelType::BIDz:
    return Parallel::BIDz;
  case ast::ParallelType::TIDx:
    return Parallel::TIDx;
  case ast::ParallelType::TIDy:
    return Parallel::TIDy;
  case ast::ParallelType::TIDz:
    return Parallel::TIDz;
  }
  FSL_UNREACHABLE("a parallel type");
}

MemoryKind memoryOf(ast::MemoryKind kind) {
  switch (kind) {
  case ast::MemoryKind::Registers:
    return MemoryKind::Registers;
  case ast::MemoryKind::Shared:
    return MemoryKind::Shared;
  case ast::MemoryKind::Recompute:
    return MemoryKind::Recompute;
  }
  FSL_UNREACHABLE("a memory kind");
}

TileOrder tileOrderOf(ast::TileOrderKind order) {
  switch (order) {
  case ast::TileOrderKind::OnePerCta:
    return TileOrder::OnePerCta;
  case ast::TileOrderKind::Persistent:
    return TileOrder::Persistent;
  case ast::TileOrderKind::StreamK:
    return TileOrder::StreamK;
  case ast::TileOrderKind::SplitK:
    return TileOrder::SplitK;
  }
  FSL_UNREACHABLE("a tile order");
}

EpilogueKind epilogueOf(ast::EpilogueKind kind) {
  switch (kind) {
  case ast::EpilogueKind::Registers:
    return EpilogueKind::Registers;
  case ast::EpilogueKind::Shared:
    return EpilogueKind::Shared;
  case ast::EpilogueKind::SharedTmaStore:
    return EpilogueKind::SharedTmaStore;
  }
  FSL_UNREACHABLE("an epilogue kind");
}

/// `when` conditions compare; the grammar allows no other operator there.
Comparison comparisonOf(ast::BinaryOp op) {
  switch (op) {
  case ast::BinaryOp::Lt:
    return Comparison::Lt;
  case ast::BinaryOp::Le:
    return Comparison::Le;
  case ast::BinaryOp::Gt:
    return Comparison::Gt;
  case ast::BinaryOp::Ge:
    return Comparison::Ge;
  case ast::BinaryOp::Eq:
    return Comparison::Eq;
  case ast::BinaryOp::Ne:
    return Comparison::Ne;
  case ast::BinaryOp::Mul:
  case ast::BinaryOp::Div:
  case ast::BinaryOp::Add:
  case ast::BinaryOp::Sub:
  case ast::BinaryOp::And:
  case ast::BinaryOp::Or:
    break;
  }
  FSL_UNREACHABLE("a `when` condition compares");
}

DirectiveOp opOf(const ast::Directive &directive) {
  using K = ast::Directive::Kind;
  switch (directive.kind()) {
  case K::Split: {
    const auto &d = llvm::cast<ast::SplitDirective>(directive);
    return Split{loopOf(d.dim), d.factorIsOuter, countOf(d.factor), nameOf(d.outer),
                 nameOf(d.inner)};
  }
  case K::Merge: {
    const auto &d = llvm::cast<ast::MergeDirective>(directive);
    return Merge{loopOf(d.first), loopOf(d.second), nameOf(d.result)};
  }
  case K::Reorder: {
    Reorder reorder;
    for (const ast::DimRef &ref : llvm::cast<ast::ReorderDirective>(directive).order)
      reorder.order.push_back(loopOf(ref));
    return reorder;
  }
  case K::Parallelize: {
    Parallelize parallelize;
    for (const ast::ParallelBinding &binding :
         llvm::cast<ast::ParallelizeDirective>(directive).bindings)
      parallelize.bindings.push_back({loopOf(binding.dim), parallelOf(binding.type)});
    return parallelize;
  }
  case K::Vectorize:
    return Vectorize{loopOf(llvm::cast<ast::VectorizeDirective>(directive).dim)};
  case K::Unroll: {
    const auto &d = llvm::cast<ast::UnrollDirective>(directive);
    Unroll unroll{loopOf(d.dim), std::nullopt};
    if (d.factor)
      unroll.factor = countOf(*d.factor);
    return unroll;
  }
  case K::Unswitch:
    return Unswitch{loopOf(llvm::cast<ast::UnswitchDirective>(directive).dim)};
  case K::Prefetch:
    return Prefetch{loopOf(llvm::cast<ast::PrefetchDirective>(directive).dim)};
  case K::Rfactor:
    return Rfactor{loopOf(llvm::cast<ast::RfactorDirective>(directive).dim)};
  case K::Inline: {
    const auto &d = llvm::cast<ast::InlineDirective>(directive);
    Inline inlined;
    if (d.tensor)
      inlined.tensor = nameOf(*d.tensor);
    return inlined;
  }
  case K::ComputeAt: {
    const auto &d = llvm::cast<ast::ComputeAtDirective>(directive);
    return ComputeAt{nameOf(d.tensor), loopOf(d.at)};
  }
  case K::ComputeWith:
    return ComputeWith{nameOf(llvm::cast<ast::ComputeWithDirective>(directive).tensor)};
  case K::Persistent: {
    const auto &d = llvm::cast<ast::PersistentDirective>(directive);
    return Persistent{nameOf(d.tensor), memoryOf(d.memory)};
  }
  case K::Cache: {
    const auto &d = llvm::cast<ast::CacheDirective>(directive);
    return Cache{nameOf(d.tensor), memoryOf(d.memory)};
  }
  case K::LaunchBounds:
    return LaunchBounds{countOf(llvm::cast<ast::LaunchBoundsDirective>(directive).value)};
  case K::MaxRRegCount:
    return MaxRRegCount{countOf(llvm::cast<ast::MaxRRegCountDirective>(directive).value)};
  case K::Pdl:
    return Pdl{};
  case K::GridSync:
    return GridSync{};
  case K::FastExp:
    return FastExp{};
  case K::FastTanh:
    return FastTanh{};
  case K::FastDiv:
    return FastDiv{};
  case K::Reduce:
    return ReduceForm{llvm::cast<ast::ReduceDirective>(directive).onePass};
  case K::Mma: {
    const auto &d = llvm::cast<ast::MmaDirective>(directive);
    return Mma{nameOf(d.reductionDim), countsOf(d.ctaTile),          countsOf(d.warpTile),
               nameOf(d.instruction),  countsOf(d.instructionShape), d.swapAB,
               d.swapABRange};
  }
  case K::Pipeline: {
    const auto &d = llvm::cast<ast::PipelineDirective>(directive);
    return Pipeline{countOf(d.stages), d.viaTma};
  }
  case K::WarpSpecialize: {
    const auto &d = llvm::cast<ast::WarpSpecializeDirective>(directive);
    return WarpSpecialize{countOf(d.producerRegs), countOf(d.consumerCount),
                          countOf(d.consumerRegs)};
  }
  case K::Tiles: {
    const auto &d = llvm::cast<ast::TilesDirective>(directive);
    Tiles tiles{tileOrderOf(d.order), std::nullopt, d.hilbert};
    if (d.parameter)
      tiles.parameter = countOf(*d.parameter);
    return tiles;
  }
  case K::Cluster: {
    const auto &d = llvm::cast<ast::ClusterDirective>(directive);
    return Cluster{countsOf(d.shape), d.multicast};
  }
  case K::Epilogue: {
    const auto &d = llvm::cast<ast::EpilogueDirective>(directive);
    Epilogue epilogue{epilogueOf(d.via), {}};
    if (d.tile)
      epilogue.tile = countsOf(*d.tile);
    return epilogue;
  }
  }
  FSL_UNREACHABLE("a directive kind");
}

} // namespace

ScheduleHeader headerOf(const ast::ScheduleDecl &decl, const ir::Fusion &fusion) {
  ScheduleHeader header;
  header.fusion = decl.fusion.text;
  header.fusionRange = decl.fusion.range;
  header.range = decl.range;
  header.isAuto = decl.isAuto;
  for (const ast::SizeCondition &condition : decl.when)
    if (std::optional<ir::DimId> dim = fusion.findDim(condition.dim.text))
      header.when.push_back({*dim, condition.dim.text, comparisonOf(condition.op),
                             condition.bound.value, condition.range,
                             condition.modulus ? condition.modulus->value : 0});
  return header;
}

bool checkGuardDims(const ast::ScheduleDecl &decl, const ir::Fusion &fusion,
                    DiagnosticEngine &diagnostics) {
  bool known = true;
  for (const ast::SizeCondition &condition : decl.when) {
    if (condition.modulus) {
      // Divisibility by a power of two is what a variant can use (whole vectors over a
      // runtime row), and keeps the guard rules' search over sizes finite and exact.
      int64_t modulus = condition.modulus->value;
      bool powerOfTwo = modulus >= 2 && modulus <= 65536 && (modulus & (modulus - 1)) == 0;
      bool divisibility =
          (condition.op == ast::BinaryOp::Eq || condition.op == ast::BinaryOp::Ne) &&
          condition.bound.value == 0;
      if (!powerOfTwo || !divisibility) {
        diagnostics.report(DiagId::InvalidWhenModulus, condition.range, condition.dim.text,
                           modulus);
        known = false;
      }
    }
    if (fusion.findDim(condition.dim.text))
      continue;
    std::vector<std::string> names;
    for (const ir::Dim &dim : fusion.dims)
      names.push_back(dim.name);
    diagnostics.report(DiagId::UnknownDim, condition.dim.range, condition.dim.text,
                       llvm::join(names, ", "));
    known = false;
  }
  return known;
}

ScheduleBlock blockOf(const ast::ScheduleDecl &decl, ScheduleHeader header) {
  ScheduleBlock block;
  block.header = std::move(header);
  for (const ast::DirectivePtr &directive : decl.directives)
    block.directives.push_back({opOf(*directive), directive->range, directive->comments.leading,
                                directive->comments.blankLineBefore});
  block.comments = decl.comments.leading;
  block.endComments = decl.endComments;
  block.trailingComment = decl.comments.trailing;
  return block;
}

std::unique_ptr<Schedule> buildSchedule(const ast::ScheduleDecl &decl, const ir::Fusion &fusion,
                                        DiagnosticEngine &diagnostics) {
  return buildSchedule(blockOf(decl, headerOf(decl, fusion)), fusion, diagnostics);
}

namespace {

/// The largest value of an int knob (2^20).
constexpr int64_t kKnobMost = int64_t(1) << 20;

/// A knob as Knobs.def lists it: what sched::checkAutoSchedule checks.
struct KnobSpec {
  const char *name;
  const char *type; // "bool" or "int"
  bool powerOfTwo;  // an int that must be a power of two
  heuristics::FamilySet families;
  const char *refused; // why no heuristic honours it, or null
};

template <typename T> constexpr const char *knobTypeName();
template <> constexpr const char *knobTypeName<bool>() { return "bool"; }
template <> constexpr const char *knobTypeName<int64_t>() { return "int"; }

const std::vector<KnobSpec> &knobSpecs() {
  using namespace heuristics::family_sets;
  enum { Any, Positive, PowerOfTwo };
  static const std::vector<KnobSpec> specs = {
#define FSL_KNOB(Field, Name, Type, Range, Families, Doc)                                          \
  {Name, knobTypeName<Type>(), Range == PowerOfTwo, Families, nullptr},
#define FSL_KNOB_REFUSED(Name, Type, Range, Families, Why, Doc)                                    \
  {Name, knobTypeName<Type>(), Range == PowerOfTwo, Families, Why},
#include "heuristics/Knobs.def"
  };
  return specs;
}

} // namespace

/// Why a known knob cannot be honoured whatever the fusion, or nothing. The heuristics
/// refuse the knobs that depend on the fusion (a vector width that does not divide it...).
static std::optional<std::string> refusedKnob(const KnobSpec &knob, const std::string &kind) {
  // Which heuristic plain `auto` runs depends on the fusion's shape, and each reads only
  // its own knobs: a knob there could silently go unused.
  if (kind.empty())
    return llvm::formatv("plain 'auto' picks its heuristic from the fusion's shape and each "
                         "heuristic reads only its own knobs; name the heuristic: {0}",
                         heuristics::familiesText(knob.families))
        .str();
  if (knob.refused)
    return std::string(knob.refused);
  return std::nullopt;
}

bool checkAutoSchedule(const ast::ScheduleDecl &decl, DiagnosticEngine &diagnostics) {
  // Knobs of each heuristic and their specs, by name.
  static const std::map<std::string, std::map<std::string, const KnobSpec *>> kinds = [] {
    std::map<std::string, std::map<std::string, const KnobSpec *>> kinds;
    for (heuristics::Family family : heuristics::kFamilies) {
      kinds[heuristics::familyName(family)]; // a kind without knobs (inner_outer) is a kind
      for (const KnobSpec &spec : knobSpecs())
        if (heuristics::contains(spec.families, family))
          kinds[heuristics::familyName(family)][spec.name] = &spec;
    }
    return kinds;
  }();
  unsigned errorsBefore = diagnostics.errorCount();
  std::string kind = decl.autoKind ? decl.autoKind->text : "";
  auto found = kinds.find(kind);
  if (decl.autoKind && found == kinds.end()) {
    diagnostics.report(DiagId::UnknownAutoKind, decl.autoKind->range, kind);
    return false;
  }
  // A knob given twice: the heuristics would read only the last.
  std::map<std::string, llvm::SMRange> seen;
  for (const ast::Knob &knob : decl.knobs)
    if (auto [first, inserted] = seen.emplace(knob.name.text, knob.range); !inserted)
      diagnostics.report(DiagId::DuplicateDirective, knob.range, "knob '" + knob.name.text + "'")
          .note(DiagId::NoteDirective, first->second, "set here");
  for (const ast::Knob &knob : decl.knobs) {
    // Without a kind, a knob must belong to some heuristic.
    const KnobSpec *spec = nullptr;
    std::vector<std::string> names;
    for (const auto &[name, knobs] : kinds) {
      if (found != kinds.end() && name != kind)
        continue;
      for (const auto &[knobName, knobSpec] : knobs) {
        names.push_back(knobName);
        if (knobName == knob.name.text)
          spec = knobSpec;
      }
    }
    if (!spec) {
      diagnostics.report(
          DiagId::UnknownKnob, knob.name.range, knob.name.text, kind.empty() ? "any" : kind,
          names.empty() ? "none (its choice reads no knob)" : llvm::join(names, ", "));
      continue;
    }
    const auto &literal = llvm::cast<ast::LiteralExpr>(*knob.value);
    bool isBool = literal.literalKind == ast::LiteralExpr::LiteralKind::Bool;
    bool isInt = literal.literalKind == ast::LiteralExpr::LiteralKind::Int;
    if (std::string(spec->type) == "bool" && !isBool)
      diagnostics.report(DiagId::KnobType, knob.value->range, knob.name.text, "true or false");
    else if (std::string(spec->type) == "int" && (!isInt || literal.intValue < 1))
      diagnostics.report(DiagId::KnobType, knob.value->range, knob.name.text, "a positive integer");
    else if (std::string(spec->type) == "int" && literal.intValue > kKnobMost)
      // Every int knob counts threads, vectors, rows, blocks, stages, tiles or parts; the
      // heuristics multiply them with each other and with sizes, which a bound keeps in
      // 64 bits (vector_width = 2^62 wrapped its bytes).
      diagnostics.report(DiagId::KnobType, knob.value->range, knob.name.text,
                         llvm::formatv("a positive integer of at most {0}", kKnobMost).str());
    else if (spec->powerOfTwo && !llvm::isPowerOf2_64(literal.intValue))
      diagnostics.report(DiagId::KnobType, knob.value->range, knob.name.text, "a power of two");
    else if (auto reason = refusedKnob(*spec, kind))
      diagnostics.report(DiagId::AutoKnobUnsupported, knob.range, knob.name.text, *reason);
  }
  return diagnostics.errorCount() == errorsBefore;
}

} // namespace fsl::sched
