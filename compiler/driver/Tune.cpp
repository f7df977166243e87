// Tune.cpp — `fslc tune`: for each shape, the fusion's file recompiled with its schedules
// replaced by `= auto(kind) { knobs }` for every candidate (tuning/Candidates.h: each knob
// alone, the matmul tile shapes, and with --pairs every two knobs together), at the shape's sizes;
// what a heuristic refuses, the checker rejects or the lowering cannot do is pruned, and a
// candidate whose schedule comes out as an earlier one's is a duplicate; a matrix product's
// candidate that the cost model (tuning/CostModel.h) estimates far slower than the heuristics'
// choice is pruned too. Each survivor's source, schedule and CUDA are written with a manifest
// (JSON).
#include "driver/Tune.h"

#include "ast/AST.h"
#include "driver/Driver.h"
#include "heuristics/FusionShape.h"
#include "heuristics/Heuristics.h"
#include "pipeline/Compilation.h"
#include "pipeline/Settings.h"
#include "pipeline/Sources.h"
#include "schedule/Printer.h"
#include "sema/Sema.h"
#include "support/Diagnostics.h"
#include "tuning/Candidates.h"
#include "tuning/CostModel.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>

#ifndef FSL_STDLIB_DIR
#define FSL_STDLIB_DIR "stdlib"
#endif

namespace fsl {
namespace {

using Shape = std::map<std::string, int64_t>;

struct TuneArguments {
  std::string input, fusion, shapes, shapesFile, outputDir, target, configPath, stdlibDir, pairs,
      variants;
  std::vector<std::string> includeDirs, defines;
  bool costModel = true; // --no-cost-model: prune only what does not compile
};

/// The arguments after `tune`; a message when they are not what `fslc tune` takes.
std::optional<std::string> parseArguments(llvm::ArrayRef<const char *> args,
                                          TuneArguments &parsed) {
  std::map<std::string, std::string *> single = {
      {"--fusion", &parsed.fusion},          {"--shapes", &parsed.shapes},
      {"--shapes-file", &parsed.shapesFile}, {"-o", &parsed.outputDir},
      {"--target", &parsed.target},          {"--config", &parsed.configPath},
      {"--stdlib", &parsed.stdlibDir},       {"--pairs", &parsed.pairs},
      {"--variants", &parsed.variants}};
  std::map<std::string, std::vector<std::string> *> repeated = {{"-I", &parsed.includeDirs},
                                                                {"-D", &parsed.defines}};
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    if (arg == "--no-cost-model") {
      parsed.costModel = false;
      continue;
    }
    auto [name, inlineValue] = arg.split('=');
    bool hasInline = arg.contains('=') && name.starts_with("--");
    std::string key = hasInline ? name.str() : arg.str();
    if (single.count(key) || repeated.count(key)) {
      std::string value;
      if (hasInline)
        value = inlineValue.str();
      else if (i + 1 < args.size())
        value = args[++i];
      else
        return "fslc tune: " + key + " needs a value";
      if (single.count(key))
        *single[key] = value;
      else
        repeated[key]->push_back(value);
    } else if (arg.starts_with("-") && arg != "-") {
      return "fslc tune: unknown option '" + arg.str() +
             "'; options: --fusion, --shapes, --shapes-file, -o, --pairs, --variants, "
             "--no-cost-model, --target, -I, -D, --config, --stdlib";
    } else if (parsed.input.empty()) {
      parsed.input = arg.str();
    } else {
      return "fslc tune: one input file, not '" + parsed.input + "' and '" + arg.str() + "'";
    }
  }
  if (parsed.input.empty() || parsed.fusion.empty() || parsed.outputDir.empty() ||
      (parsed.shapes.empty() == parsed.shapesFile.empty()))
    return "usage: fslc tune FILE --fusion NAME (--shapes \"M=4096,N=14336;...\" | "
           "--shapes-file FILE) -o DIR [--pairs K] [--variants D,...] [--no-cost-model] [--target "
           "NAME] [-I DIR] [-D NAME=VALUE] [--config fsl.toml] [--stdlib DIR]";
  int64_t pairs;
  if (!parsed.pairs.empty() && (llvm::StringRef(parsed.pairs).getAsInteger(10, pairs) || pairs < 2))
    return "fslc tune: --pairs takes how many of the fastest single knobs are paired, 2 or "
           "more, not '" +
           parsed.pairs + "'";
  return std::nullopt;
}

/// `M=4096,N=14336;M=128,N=14336` (or one shape a line of a file, `#` comments): the
/// sizes of each shape; a message for the first that does not read.
std::optional<std::string> parseShapes(llvm::StringRef text, std::vector<Shape> &shapes) {
  std::string separated = text.str();
  std::replace(separated.begin(), separated.end(), ';', '\n');
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(separated).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    line = line.split('#').first.trim();
    if (line.empty())
      continue;
    Shape shape;
    llvm::SmallVector<llvm::StringRef> sizes;
    line.split(sizes, ',', -1, false);
    for (llvm::StringRef size : sizes) {
      auto [name, value] = size.trim().split('=');
      int64_t extent;
      if (name.trim().empty() || value.trim().getAsInteger(10, extent) || extent <= 0)
        return "invalid shape '" + line.str() + "': expected NAME=SIZE,... with positive sizes";
      if (!shape.emplace(name.trim().str(), extent).second)
        return "shape '" + line.str() + "' gives '" + name.trim().str() + "' twice";
    }
    shapes.push_back(std::move(shape));
  }
  if (shapes.empty())
    return "no shapes given";
  return std::nullopt;
}

std::string shapeText(const Shape &shape) {
  std::vector<std::string> parts;
  for (const auto &[name, size] : shape)
    parts.push_back(name + "=" + std::to_string(size));
  return llvm::join(parts, ",");
}

std::string shapeFolder(const Shape &shape) {
  std::vector<std::string> parts;
  for (const auto &[name, size] : shape)
    parts.push_back(name + std::to_string(size));
  return llvm::join(parts, "_");
}

/// The first error of a compilation, as `message [id]`.
std::string firstError(const CollectingDiagnosticConsumer &collected) {
  for (const Diagnostic &diagnostic : collected.diagnostics)
    if (diagnostic.severity == Severity::Error)
      return diagnostic.message + " [" + std::string(diagInfo(diagnostic.kind).id) + "]";
  return "rejected";
}

bool writeFile(const std::string &path, llvm::StringRef text, llvm::raw_ostream &err) {
  std::error_code error;
  llvm::raw_fd_ostream out(path, error);
  if (error) {
    err << "fslc tune: cannot write '" << path << "': " << error.message() << "\n";
    return false;
  }
  out << text;
  return true;
}

class Tuner {
public:
  Tuner(const TuneArguments &arguments, const Settings &settings,
        std::vector<std::string> variantDims, llvm::SourceMgr &sources, llvm::raw_ostream &out,
        llvm::raw_ostream &err)
      : arguments_(arguments), settings_(settings), sources_(sources), out_(out), err_(err),
        variantDims_(std::move(variantDims)) {}

  int run(llvm::StringRef text, const std::vector<Shape> &shapes) {
    pipeline::Options base = baseOptions();
    // Static dimensions without a value take the first shape's (as the JIT specializes).
    // Launch-time variants are compiled as ahead of time: no size is specialized, and the
    // variants' dimensions are runtime sizes even where the file declares a value.
    pipeline::Options firstShape = base;
    if (variantDims_.empty())
      firstShape.specializeDims = shapes.front();
    // The fusion, its family and the text of its schedules, from the file as written.
    CollectingDiagnosticConsumer collected;
    DiagnosticEngine diagnostics(collected);
    pipeline::Compilation compilation(firstShape, sources_, arguments_.input);
    unsigned buffer = pipeline::addSourceText(sources_, arguments_.input, text.str());
    if (!compilation.parse(buffer, diagnostics) || !compilation.analyze(diagnostics)) {
      err_ << "fslc tune: " << arguments_.input << " does not compile: " << firstError(collected)
           << "\n";
      return kExitDiagnostics;
    }
    const ir::Fusion *fusion = nullptr;
    for (const auto &each : compilation.program()->fusions)
      if (each->name == arguments_.fusion)
        fusion = each.get();
    if (!fusion) {
      err_ << "fslc tune: no fusion '" << arguments_.fusion << "' in " << arguments_.input << "\n";
      return kExitUsage;
    }
    for (const Shape &shape : shapes)
      for (const auto &[name, size] : shape)
        if (llvm::none_of(fusion->dims,
                          [&, &name = name](const ir::Dim &dim) { return dim.name == name; })) {
          err_ << "fslc tune: shape " << shapeText(shape) << ": '" << name
               << "' is no dimension of '" << fusion->name << "'\n";
          return kExitUsage;
        }
    for (const std::string &dim : variantDims_) {
      if (llvm::none_of(fusion->dims, [&](const ir::Dim &each) { return each.name == dim; })) {
        err_ << "fslc tune: --variants: '" << dim << "' is no dimension of '" << fusion->name
             << "'\n";
        return kExitUsage;
      }
      for (const Shape &shape : shapes)
        if (!shape.count(dim)) {
          err_ << "fslc tune: shape " << shapeText(shape) << " gives no size of '" << dim
               << "', whose launch-time variants are tuned (--variants)\n";
          return kExitUsage;
        }
    }
    family_ = heuristics::plainAutoFamily(*fusion);
    // The candidates replace the fusion's schedules; the rest of the file stays.
    std::string withoutSchedules;
    text = sources_.getMemoryBuffer(buffer)->getBuffer(); // where the ranges point
    const char *from = text.data();
    for (const ast::DeclPtr &decl : compilation.program()->main->decls)
      if (const auto *schedule = llvm::dyn_cast<ast::ScheduleDecl>(decl.get()))
        if (schedule->fusion.text == fusion->name) {
          withoutSchedules.append(from, schedule->range.Start.getPointer());
          from = schedule->range.End.getPointer();
          if (from < text.end() && *from == ';')
            ++from;
        }
    withoutSchedules.append(from, text.end());
    unsourced_ = llvm::StringRef(withoutSchedules).rtrim().str() + "\n";

    // The first round: the heuristics' choice, each knob alone and the matmul tile shapes
    // (tile_m with tile_n, one candidate each); with --pairs, the second:
    // every two knobs together (the runner times those whose knobs both did well alone).
    // For launch-time variants the heuristics' choice is the file as compiled without a
    // database (their own variants), and every other candidate is a variant under the
    // shape's guard, `= auto(kind)` without knobs first.
    struct Planned {
      tuning::KnobSettings knobs;
      int round;
      bool heuristics;
    };
    std::vector<Planned> rounds;
    for (tuning::KnobSettings &knobs : tuning::candidateKnobs(family_)) {
      bool heuristics = knobs.empty();
      rounds.push_back({std::move(knobs), 1, heuristics});
      if (heuristics && !variantDims_.empty())
        rounds.push_back({{}, 1, false});
    }
    if (!arguments_.pairs.empty())
      for (tuning::KnobSettings &knobs : tuning::pairedKnobs(family_))
        rounds.push_back({std::move(knobs), 2, false});

    llvm::json::Array candidates, pruned, duplicates;
    unsigned nextId = 0;
    for (const Shape &sizes : shapes) {
      std::map<std::string, unsigned> seen; // schedule text -> candidate id
      // The heuristics' choice's estimate at this shape: what the others are pruned against.
      std::optional<tuning::ProductEstimate> heuristicsEstimate;
      std::string folder = arguments_.outputDir + "/" + shapeFolder(sizes);
      if (std::error_code error = llvm::sys::fs::create_directories(folder)) {
        err_ << "fslc tune: cannot create '" << folder << "': " << error.message() << "\n";
        return kExitUsage;
      }
      unsigned firstAtShape = nextId;
      std::string heuristicsPruned; // why the heuristics' own choice was pruned here
      for (const auto &[knobs, round, heuristics] : rounds) {
        std::string guard =
            variantDims_.empty() || heuristics ? std::string() : variantGuard(sizes);
        std::string source = candidateSource(knobs, guard);
        pipeline::Options options = base;
        if (variantDims_.empty())
          options.specializeDims = sizes;
        options.onlyFusions = {fusion->name};
        options.scheduleEveryFusion = true;
        options.symbolPrefix = "c" + std::to_string(nextId) + "_";
        CollectingDiagnosticConsumer candidateDiagnostics;
        DiagnosticEngine engine(candidateDiagnostics);
        pipeline::Compilation candidate(options, sources_, arguments_.input);
        unsigned candidateBuffer = pipeline::addSourceText(sources_, arguments_.input, source);
        bool compiled = candidate.parse(candidateBuffer, engine) && candidate.analyze(engine) &&
                        candidate.schedule(engine) && candidate.lower(engine) &&
                        engine.errorCount() == 0;
        llvm::json::Object knobObject = knobsJson(knobs);
        if (!compiled) {
          std::string reason = firstError(candidateDiagnostics);
          if (heuristics && heuristicsPruned.empty())
            heuristicsPruned = reason;
          pruned.push_back(llvm::json::Object{{"shape", shapeJson(sizes)},
                                              {"knobs", std::move(knobObject)},
                                              {"reason", std::move(reason)}});
          continue;
        }
        const ir::Fusion *compiledFusion = nullptr;
        for (const auto &each : candidate.program()->fusions)
          if (each->name == fusion->name)
            compiledFusion = each.get();
        std::optional<tuning::ProductEstimate> estimate = estimateOf(candidate, *compiledFusion);
        if (heuristics)
          heuristicsEstimate = estimate;
        else if (estimate && heuristicsEstimate &&
                 estimate->micros > tuning::kPruneAbove * heuristicsEstimate->micros) {
          pruned.push_back(llvm::json::Object{
              {"shape", shapeJson(sizes)},
              {"knobs", std::move(knobObject)},
              {"reason", llvm::formatv("the cost model estimates {0:F2}x the heuristics' time "
                                       "({1}; the heuristics': {2})",
                                       estimate->micros / heuristicsEstimate->micros,
                                       estimate->summary, heuristicsEstimate->summary)
                             .str()}});
          continue;
        }
        auto [key, printed] = scheduleText(candidate, *compiledFusion);
        auto [earlier, first] = seen.emplace(key, nextId);
        if (!first) {
          duplicates.push_back(llvm::json::Object{{"shape", shapeJson(sizes)},
                                                  {"knobs", std::move(knobObject)},
                                                  {"same_as", earlier->second}});
          continue;
        }
        unsigned id = nextId++;
        codegen::GeneratedSources cuda = candidate.generate(*compiledFusion);
        std::string stem = folder + "/" + cuda.name;
        if (!writeFile(stem + ".fsl", source, err_) ||
            !writeFile(stem + ".cu", cuda.source, err_) ||
            !writeFile(stem + ".h", cuda.header, err_))
          return kExitUsage;
        std::string relative = shapeFolder(sizes) + "/" + cuda.name;
        llvm::json::Object entry{{"id", id},
                                 {"shape", shapeJson(sizes)},
                                 {"knobs", std::move(knobObject)},
                                 {"heuristics", heuristics},
                                 {"round", round},
                                 {"source", relative + ".fsl"},
                                 {"cuda", relative + ".cu"},
                                 {"schedule", printed}};
        if (!guard.empty())
          entry["guard"] = guard;
        if (estimate) {
          entry["estimate_us"] = static_cast<int64_t>(std::lround(estimate->micros));
          entry["estimate"] = estimate->summary;
        }
        candidates.push_back(std::move(entry));
      }
      // A shape without a candidate is timed by nothing: say why where it is seen.
      if (nextId == firstAtShape) {
        std::string label;
        for (const auto &[dim, size] : sizes)
          label += (label.empty() ? "" : ",") + dim + "=" + std::to_string(size);
        err_ << "fslc tune: warning: no candidate at " << label << "; every one was pruned"
             << (heuristicsPruned.empty() ? std::string()
                                          : ", the heuristics' own because: " + heuristicsPruned)
             << "\n";
      }
    }
    llvm::json::Object manifest{{"fusion", fusion->name},
                                {"kind", heuristics::familyName(family_)},
                                {"file", arguments_.input},
                                {"target", settings_.target.name},
                                {"candidates", std::move(candidates)},
                                {"pruned", std::move(pruned)},
                                {"duplicates", std::move(duplicates)}};
    if (!arguments_.pairs.empty())
      manifest["pairs"] = std::stoll(arguments_.pairs);
    if (!variantDims_.empty()) {
      llvm::json::Array dims;
      for (const std::string &dim : variantDims_)
        dims.push_back(dim);
      manifest["variants"] = std::move(dims);
    }
    std::string json;
    llvm::raw_string_ostream jsonOut(json);
    jsonOut << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
    if (!writeFile(arguments_.outputDir + "/manifest.json", json, err_))
      return kExitUsage;
    out_ << "fslc tune: " << nextId << " candidates for '" << fusion->name << "' at "
         << shapes.size() << " shape" << (shapes.size() == 1 ? "" : "s") << " in "
         << arguments_.outputDir << "/manifest.json\n";
    return kExitSuccess;
  }

private:
  pipeline::Options baseOptions() const {
    pipeline::Options options = compileOptionsFrom(settings_);
    options.runtimeDims.insert(options.runtimeDims.end(), variantDims_.begin(), variantDims_.end());
    // The candidates are the heuristics' choice and its knobs, never a database's entry.
    options.tuningDatabase.clear();
    return options;
  }

  /// The file with the candidate's schedule: `= auto(kind) { knobs }`, or for a variant
  /// that under `guard` and the heuristics' `= auto(kind)` for every other size (what a
  /// database entry `when guard` makes of the runtime-size fusion).
  std::string candidateSource(const tuning::KnobSettings &knobs, const std::string &guard) const {
    std::string knobText = tuning::knobBlockText(knobs);
    std::string kind = heuristics::familyName(family_);
    std::string schedule = "\nschedule " + arguments_.fusion;
    if (guard.empty())
      return unsourced_ + schedule + " = auto(" + kind + ")" +
             (knobText.empty() ? ";" : " " + knobText) + "\n";
    return unsourced_ + schedule + " when " + guard + " = auto(" + kind + ")" +
           (knobText.empty() ? ";" : " " + knobText) + schedule + " = auto(" + kind + ");\n";
  }

  /// `H == 4096 && ...`: the shape's sizes of the variants' dimensions.
  std::string variantGuard(const Shape &sizes) const {
    std::vector<std::string> conditions;
    for (const std::string &dim : variantDims_)
      conditions.push_back(dim + " == " + std::to_string(sizes.at(dim)));
    return llvm::join(conditions, " && ");
  }

  /// The cost model's estimate for a matrix product's candidate at static sizes (none for
  /// other families, launch-time variants, several blocks, or under --no-cost-model).
  std::optional<tuning::ProductEstimate> estimateOf(const pipeline::Compilation &compiled,
                                                    const ir::Fusion &fusion) const {
    if (!arguments_.costModel || family_ != heuristics::Family::Matmul || !variantDims_.empty())
      return std::nullopt;
    const sched::Schedule *built = nullptr;
    for (const pipeline::PlannedSchedule &planned : compiled.schedules().planned) {
      if (planned.fusion != &fusion || planned.block.header.isAuto)
        continue;
      if (built || !planned.built)
        return std::nullopt; // several blocks (variants by size): no one estimate
      built = planned.built;
    }
    if (!built || !built->fusion)
      return std::nullopt;
    heuristics::FusionShape shape = heuristics::shapeOf(*built->fusion);
    if (!shape.matmul || !shape.matmul->m.extent || !shape.matmul->n.extent ||
        !shape.matmul->k.extent)
      return std::nullopt;
    const heuristics::MatmulShape &product = *shape.matmul;
    return tuning::estimateProduct(built->matmul, *product.m.extent, *product.n.extent,
                                   *product.k.extent, product.twoProducts ? 2 : 1,
                                   product.outputBytes ? product.outputBytes : 2, settings_.target);
  }

  /// The fusion's schedule blocks printed without the heuristics' reasons (what tells two
  /// candidates apart), and with them and the build's notes (what the manifest shows).
  static std::pair<std::string, std::string> scheduleText(const pipeline::Compilation &compiled,
                                                          const ir::Fusion &fusion) {
    std::string key, printed;
    llvm::raw_string_ostream keyOut(key), printedOut(printed);
    for (const pipeline::PlannedSchedule &planned : compiled.schedules().planned) {
      if (planned.fusion != &fusion || planned.block.header.isAuto)
        continue;
      sched::ScheduleBlock bare = planned.block;
      bare.reasons.clear();
      sched::printBlock(bare, {}, keyOut);
      sched::printBlock(planned.block,
                        planned.built ? planned.built->notes : std::vector<std::string>(),
                        printedOut);
    }
    return {key, printed};
  }

  static llvm::json::Object knobsJson(const tuning::KnobSettings &knobs) {
    llvm::json::Object object;
    for (const auto &[name, value] : knobs) {
      int64_t number;
      if (value == "true" || value == "false")
        object[name] = value == "true";
      else if (!llvm::StringRef(value).getAsInteger(10, number))
        object[name] = number;
      else
        object[name] = value;
    }
    return object;
  }

  static llvm::json::Object shapeJson(const Shape &shape) {
    llvm::json::Object object;
    for (const auto &[name, size] : shape)
      object[name] = size;
    return object;
  }

  const TuneArguments &arguments_;
  const Settings &settings_;
  llvm::SourceMgr &sources_;
  llvm::raw_ostream &out_, &err_;
  heuristics::Family family_ = heuristics::Family::Pointwise;
  std::string unsourced_; // the file without the fusion's schedules
  /// The dimensions whose launch-time variants are tuned (--variants), sorted.
  std::vector<std::string> variantDims_;
};

/// `--variants H,S`: the names, sorted (the order of the guards `record` writes).
std::vector<std::string> variantDimsOf(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> names;
  text.split(names, ',', -1, false);
  std::vector<std::string> dims;
  for (llvm::StringRef name : names)
    dims.push_back(name.trim().str());
  llvm::sort(dims);
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

} // namespace

int runTune(llvm::ArrayRef<const char *> args, const char *executablePath, llvm::raw_ostream &out,
            llvm::raw_ostream &err) {
  TuneArguments arguments;
  if (std::optional<std::string> usage = parseArguments(args, arguments)) {
    err << *usage << "\n";
    return kExitUsage;
  }
  llvm::SourceMgr sources;
  TextDiagnosticPrinter printer(sources, err, false);
  DiagnosticEngine diagnostics(printer);
  SettingsRequest request;
  request.firstInput = arguments.input;
  request.configPath = arguments.configPath;
  request.target = arguments.target;
  request.includeDirs = arguments.includeDirs;
  request.defines = arguments.defines;
  request.stdlibDir = arguments.stdlibDir;
  if (request.stdlibDir.empty()) {
    const char *fromEnvironment = std::getenv("FSLC_STDLIB");
    llvm::SmallString<256> installed(llvm::sys::path::parent_path(executablePath));
    llvm::sys::path::append(installed, "..", "share", "fslc", "stdlib");
    llvm::sys::path::remove_dots(installed, /*remove_dot_dot=*/true);
    request.stdlibDir = fromEnvironment && *fromEnvironment      ? fromEnvironment
                        : llvm::sys::fs::is_directory(installed) ? std::string(installed)
                                                                 : FSL_STDLIB_DIR;
  }
  Settings settings;
  settings.stdlibDir = request.stdlibDir;
  if (!configure(request, sources, diagnostics, settings))
    return kExitUsage;
  std::string shapeText = arguments.shapes;
  if (!arguments.shapesFile.empty()) {
    auto file = llvm::MemoryBuffer::getFile(arguments.shapesFile);
    if (!file) {
      err << "fslc tune: cannot read '" << arguments.shapesFile
          << "': " << file.getError().message() << "\n";
      return kExitUsage;
    }
    shapeText = (*file)->getBuffer().str();
  }
  std::vector<Shape> shapes;
  if (std::optional<std::string> invalid = parseShapes(shapeText, shapes)) {
    err << "fslc tune: " << *invalid << "\n";
    return kExitUsage;
  }
  auto input = llvm::MemoryBuffer::getFile(arguments.input);
  if (!input) {
    err << "fslc tune: cannot read '" << arguments.input << "': " << input.getError().message()
        << "\n";
    return kExitUsage;
  }
  return Tuner(arguments, settings, variantDimsOf(arguments.variants), sources, out, err)
      .run((*input)->getBuffer(), shapes);
}

} // namespace fsl
