// Printer.cpp — resolved loop nests as a table per tensor.
#include "schedule/Printer.h"

#include "ir/Printer.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/raw_ostream.h>

namespace fsl::sched {

namespace {

std::string guardText(const ast::ScheduleDecl &decl) {
  std::vector<std::string> parts;
  for (const ast::SizeCondition &c : decl.when)
    parts.push_back(c.dim.text + " " + ast::binaryOpSpelling(c.op).str() + " " +
                    std::to_string(c.bound.value));
  return parts.empty() ? "" : " when " + llvm::join(parts, " && ");
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
  out << "schedule " << fusion.name << guardText(*schedule.decl) << "\n";
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
      roles.push_back("in " + ast::memoryKindName(*tensor.persistent).str());
    if (tensor.cache)
      roles.push_back("cached in " + ast::memoryKindName(*tensor.cache).str());
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

/// Notes that need the final loop nests: persistent buffers and compute_with.
std::string placementNote(const Schedule &schedule, const ast::Directive &directive) {
  for (const TensorSchedule &tensor : schedule.tensors) {
    if (tensor.persistentBy == &directive) {
      int64_t perThread = 1;
      for (const Loop &loop : tensor.loops) {
        if (isBlockIndex(loop.parallel) || isThreadIndex(loop.parallel))
          continue;
        if (!loop.extent.isStatic())
          return tensor.name + ": runtime size per thread";
        perThread *= *loop.extent.value;
      }
      return llvm::formatv("{0}: {1} values of {2} per thread", tensor.name, perThread,
                           ir::dtypeName(tensor.dtype))
          .str();
    }
    if (tensor.computeWithBy == &directive && !tensor.consumers.empty())
      return "with its first consumer, " + schedule.tensors[tensor.consumers[0]].name;
  }
  return "";
}

void annotateDirectives(const Schedule &schedule) {
  for (const ast::DirectivePtr &directive : schedule.decl->directives) {
    auto it = schedule.notes.find(directive.get());
    std::string placement = placementNote(schedule, *directive);
    if (!placement.empty()) {
      const_cast<ast::Directive &>(*directive).comments.trailing = "// " + placement;
      continue;
    }
    // The printer owns comments; derived notes replace what an earlier print wrote.
    const_cast<ast::Directive &>(*directive).comments.trailing =
        it == schedule.notes.end() || it->second.empty() ? "" : "// " + it->second;
  }
}

} // namespace fsl::sched
