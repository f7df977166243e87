// Printer.cpp — directives and blocks as schedule text; resolved loop nests as a table
// per tensor.
#include "schedule/Printer.h"

#include "ir/Printer.h"
#include "support/Internal.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl::sched {

namespace {

template <typename T, typename F>
void printList(const std::vector<T> &items, llvm::raw_ostream &out, F printItem) {
  llvm::interleave(items, out, printItem, ", ");
}

void printLoopRef(const LoopRef &ref, llvm::raw_ostream &out) {
  if (ref.tensor)
    out << ref.tensor->text << '.';
  out << ref.loop.text;
}

void printTuple(const std::vector<Count> &tuple, llvm::raw_ostream &out) {
  out << '(';
  printList(tuple, out, [&](const Count &count) { out << count.value; });
  out << ')';
}

/// Writes each kind of directive; std::visit needs one overload per alternative.
struct DirectiveWriter {
  llvm::raw_ostream &out;

  void operator()(const Split &d) {
    out << "split ";
    printLoopRef(d.loop, out);
    out << (d.factorIsOuter ? " into " : " by ") << d.factor.value << " -> (" << d.outer.text
        << ", " << d.inner.text << ')';
  }
  void operator()(const Merge &d) {
    out << "merge (";
    printLoopRef(d.first, out);
    out << ", ";
    printLoopRef(d.second, out);
    out << ") -> " << d.result.text;
  }
  void operator()(const Reorder &d) {
    out << "reorder (";
    printList(d.order, out, [&](const LoopRef &ref) { printLoopRef(ref, out); });
    out << ')';
  }
  void operator()(const Parallelize &d) {
    out << "parallelize ";
    printList(d.bindings, out, [&](const Binding &binding) {
      printLoopRef(binding.loop, out);
      out << " -> " << parallelName(binding.parallel);
    });
  }
  void operator()(const Vectorize &d) {
    out << "vectorize ";
    printLoopRef(d.loop, out);
  }
  void operator()(const Unroll &d) {
    out << "unroll ";
    printLoopRef(d.loop, out);
    if (d.factor)
      out << " by " << d.factor->value;
  }
  void operator()(const Unswitch &d) {
    out << "unswitch ";
    printLoopRef(d.loop, out);
  }
  void operator()(const Prefetch &d) {
    out << "prefetch ";
    printLoopRef(d.loop, out);
  }
  void operator()(const Rfactor &d) {
    out << "rfactor ";
    printLoopRef(d.loop, out);
  }
  void operator()(const Inline &d) { out << "inline " << (d.tensor ? d.tensor->text : "all"); }
  void operator()(const ComputeAt &d) {
    out << "compute_at " << d.tensor.text << ' ';
    printLoopRef(d.at, out);
  }
  void operator()(const ComputeWith &d) { out << "compute_with " << d.tensor.text; }
  void operator()(const Persistent &d) {
    out << "persistent " << d.tensor.text << " in " << memoryKindName(d.memory);
  }
  void operator()(const Cache &d) {
    out << "cache " << d.tensor.text << " in " << memoryKindName(d.memory);
  }
  void operator()(const LaunchBounds &d) { out << "launch_bounds " << d.threads.value; }
  void operator()(const MaxRRegCount &d) { out << "maxrregcount " << d.registers.value; }
  void operator()(const Pdl &) { out << "pdl"; }
  void operator()(const GridSync &) { out << "grid_sync"; }
  void operator()(const FastExp &) { out << "fast_exp"; }
  void operator()(const FastTanh &) { out << "fast_tanh"; }
  void operator()(const FastDiv &) { out << "fast_div"; }
  void operator()(const ReduceForm &d) {
    out << (d.onePass ? "reduce one_pass" : "reduce two_pass");
  }
  void operator()(const Mma &d) {
    out << "mma over " << d.reductionDim.text << ": tile ";
    printTuple(d.ctaTile, out);
    out << ", warp ";
    printTuple(d.warpTile, out);
    out << ", instruction " << d.instruction.text;
    printTuple(d.instructionShape, out);
    if (d.swapAB)
      out << ", swap_ab";
  }
  void operator()(const Pipeline &d) {
    out << "pipeline " << d.stages.value << " stages";
    if (d.viaTma)
      out << " via tma";
  }
  void operator()(const WarpSpecialize &d) {
    out << "warp_specialize producer(regs " << d.producerRegs.value << "), consumers("
        << d.consumerCount.value << ", regs " << d.consumerRegs.value << ')';
  }
  void operator()(const Tiles &d) {
    out << "tiles " << tileOrderName(d.order);
    if (d.parameter)
      out << (d.order == TileOrder::SplitK ? " "
              : d.hilbert                  ? " hilbert "
                                           : " swizzle ")
          << d.parameter->value;
  }
  void operator()(const Cluster &d) {
    out << "cluster ";
    printTuple(d.shape, out);
    if (d.multicast)
      out << " multicast";
  }
  void operator()(const Epilogue &d) {
    out << "epilogue via ";
    switch (d.via) {
    case EpilogueKind::Registers:
      out << "registers";
      break;
    case EpilogueKind::Shared:
      out << "shared";
      break;
    case EpilogueKind::SharedTmaStore:
      out << "shared tma_store";
      break;
    }
    if (!d.tile.empty()) {
      out << ", tile ";
      printTuple(d.tile, out);
    }
  }
};

constexpr const char *kIndent = "    ";

void commentLines(const std::vector<std::string> &lines, const char *indent,
                  llvm::raw_ostream &out) {
  for (const std::string &line : lines) {
    if (!line.empty())
      out << indent << line;
    out << '\n';
  }
}

std::string annotations(const Loop &loop) {
  std::vector<std::string> parts;
  if (loop.parallel != Parallel::Serial)
    parts.push_back(parallelName(loop.parallel).str());
  if (loop.vectorized)
    parts.push_back("vectorize");
  if (loop.unrolled)
    parts.push_back(loop.unrollFactor ? "unroll " + std::to_string(*loop.unrollFactor) : "unroll");
  if (loop.unswitched)
    parts.push_back("unswitch");
  if (loop.prefetchedBy)
    parts.push_back("prefetch");
  if (parts.empty())
    parts.push_back("serial");
  if (loop.isReduction)
    parts.push_back("reduction");
  if (!loop.exact)
    parts.push_back("partial");
  return llvm::join(parts, ", ");
}

} // namespace

void printResolved(const Schedule &schedule, llvm::raw_ostream &out) {
  const ir::Fusion &fusion = *schedule.fusion;
  out << "schedule " << fusion.name;
  if (!schedule.header.when.empty())
    out << " when " << guardText(schedule.header.when);
  out << "\n";
  for (const TensorSchedule &tensor : schedule.tensors) {
    // Inputs and outputs show their memory layout; other values the fusion's order.
    std::vector<ir::DimId> dims = tensor.value->dims;
    if (tensor.isInput)
      dims = fusion.params[tensor.value->paramIndex].dims;
    for (const ir::Output &output : fusion.outputs)
      if (output.value == tensor.value && !tensor.isInput) {
        dims = output.dims;
        break;
      }
    out << "  tensor " << tensor.name;
    for (const std::string &alias : tensor.aliases)
      out << " (= " << alias << ")";
    out << ": " << ir::typeString(fusion, tensor.dtype, dims);
    if (!tensor.value->reduced.empty()) {
      std::vector<std::string> reduced;
      for (ir::DimId dim : tensor.value->reduced)
        reduced.push_back(fusion.dims[dim].name);
      out << " over " << llvm::join(reduced, ", ");
    }
    std::vector<std::string> roles;
    if (tensor.isInput)
      roles.push_back("input");
    if (tensor.isOutput)
      roles.push_back("output");
    if (tensor.isPersistentBuffer)
      roles.push_back("persistent buffer");
    if (tensor.persistent)
      roles.push_back("in " + memoryKindName(*tensor.persistent).str());
    if (tensor.cache)
      roles.push_back("cached in " + memoryKindName(*tensor.cache).str());
    if (tensor.computeWithBy)
      roles.push_back("computed with its first consumer");
    if (tensor.computeAtPosition)
      roles.push_back("computed at " + tensor.loops[*tensor.computeAtPosition].name);
    if (!roles.empty())
      out << "  [" << llvm::join(roles, "; ") << "]";
    out << "\n";
    for (const Loop &loop : tensor.loops) {
      std::vector<std::string> roots;
      for (ir::DimId dim : loop.roots)
        roots.push_back(fusion.dims[dim].name);
      out << llvm::format("    %-8s %-22s %-28s of %s\n", loop.name.c_str(),
                          ("extent " + loop.extent.text).c_str(), annotations(loop).c_str(),
                          llvm::join(roots, "*").c_str());
    }
  }
}

void printDirective(const Directive &directive, llvm::raw_ostream &out) {
  std::visit(DirectiveWriter{out}, directive.op);
  out << ';';
}

std::string directiveText(const Directive &directive) {
  std::string text;
  llvm::raw_string_ostream out(text);
  printDirective(directive, out);
  return text;
}

void printBlock(const ScheduleBlock &block, const std::vector<std::string> &notes,
                llvm::raw_ostream &out) {
  commentLines(block.comments, "", out);
  for (const std::string &reason : block.reasons)
    out << "// " << reason << '\n';
  out << "schedule " << block.header.fusion;
  if (!block.header.when.empty())
    out << " when " << guardText(block.header.when);
  out << " {\n";
  for (size_t i = 0; i < block.directives.size(); ++i) {
    const Directive &directive = block.directives[i];
    if (directive.blankLineBefore && i != 0)
      out << '\n';
    commentLines(directive.comments, kIndent, out);
    out << kIndent;
    printDirective(directive, out);
    if (i < notes.size() && !notes[i].empty())
      out << "  // " << notes[i];
    out << '\n';
  }
  commentLines(block.endComments, kIndent, out);
  out << '}';
  if (!block.trailingComment.empty())
    out << "  " << block.trailingComment;
  out << '\n';
}

std::string formatBlocks(const std::vector<ScheduleBlock> &blocks) {
  std::string text;
  llvm::raw_string_ostream out(text);
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (i != 0)
      out << '\n';
    printBlock(blocks[i], {}, out);
  }
  return text;
}

} // namespace fsl::sched
