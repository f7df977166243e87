// Completion.cpp — the context from the text before the cursor, then the candidates.
#include "lsp/Completion.h"

#include "lsp/KnobCatalog.h"

#include "heuristics/Family.h"
#include "heuristics/Knobs.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Regex.h>

#include <set>

namespace fsl::lsp {
namespace {

using mlir::lsp::CompletionItem;
using mlir::lsp::CompletionItemKind;

/// Where the cursor is, read from the text before it (comments skipped).
struct Context {
  int depth = 0;         // braces open around the cursor
  std::string header;    // the declaration's text before its `{` (depth >= 1)
  std::string statement; // the text since the last `;`, `{` or `}`
  std::string fusion;    // `schedule NAME` / `fusion NAME` of the declaration
};

Context contextAt(llvm::StringRef before) {
  Context context;
  size_t declStart = 0, statementStart = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    char c = before[i];
    if (c == '/' && i + 1 < before.size() && before[i + 1] == '/') {
      size_t newline = before.find('\n', i);
      if (newline == llvm::StringRef::npos) {
        context.statement = "//";
        return context; // inside a comment: nothing to complete
      }
      i = newline;
      continue;
    }
    if (c == '"') { // a string (an import path): skip to its end
      size_t close = before.find('"', i + 1);
      if (close == llvm::StringRef::npos) {
        context.statement = before.substr(statementStart).str();
        return context;
      }
      i = close;
      continue;
    }
    if (c == '{') {
      if (context.depth == 0)
        context.header = before.slice(declStart, i).trim().str();
      ++context.depth;
      statementStart = i + 1;
    } else if (c == '}') {
      context.depth = std::max(0, context.depth - 1);
      statementStart = i + 1;
      if (context.depth == 0)
        declStart = i + 1;
    } else if (c == ';') {
      statementStart = i + 1;
      if (context.depth == 0)
        declStart = i + 1;
    }
  }
  context.statement = before.substr(statementStart).ltrim().str();
  if (context.depth == 0)
    context.header = before.substr(declStart).ltrim().str();
  llvm::SmallVector<llvm::StringRef, 2> match;
  if (llvm::Regex("^(schedule|fusion)[ \t\r\n]+([A-Za-z_][A-Za-z0-9_]*)")
          .match(context.header, &match))
    context.fusion = match[2].str();
  return context;
}

void addItem(std::vector<CompletionItem> &items, llvm::StringRef label, CompletionItemKind kind,
             llvm::StringRef detail, llvm::StringRef documentation = "",
             llvm::StringRef snippet = "") {
  CompletionItem item(label, kind);
  item.detail = detail.str();
  if (!documentation.empty())
    item.documentation =
        mlir::lsp::MarkupContent{mlir::lsp::MarkupKind::Markdown, documentation.str()};
  if (!snippet.empty()) {
    item.insertText = snippet.str();
    item.insertTextFormat = mlir::lsp::InsertTextFormat::Snippet;
  }
  items.push_back(std::move(item));
}

/// Every directive, with a snippet of its operands.
void addDirectives(std::vector<CompletionItem> &items) {
  static const std::vector<std::array<const char *, 3>> directives = {
      {"split", "split a loop: `by` the inner extent, `into` the outer",
       "split ${1:H} by ${2:8} -> (${3:Ho}, ${4:Hi});"},
      {"merge", "merge two loops into one", "merge(${1:A}, ${2:B}) -> ${3:AB};"},
      {"reorder", "reorder loops, outermost first", "reorder(${1:A}, ${2:B});"},
      {"parallelize", "bind loops to blocks or threads",
       "parallelize ${1:T} -> ${2|BIDx,BIDy,BIDz,TIDx,TIDy,TIDz|};"},
      {"vectorize", "one 2-16 byte access a vector", "vectorize ${1:Hv};"},
      {"unroll", "unroll a loop, fully or by N", "unroll ${1:Hp};"},
      {"unswitch", "a copy of the nest without bounds checks", "unswitch ${1:Hp};"},
      {"prefetch", "the row walk loads each next row during the current one", "prefetch ${1:Ts};"},
      {"rfactor", "factor a reduction's serial part", "rfactor ${1:Hp};"},
      {"inline", "substitute a value into its uses", "inline ${1:all};"},
      {"compute_at", "compute a tensor inside a consumer's loop", "compute_at ${1:t} ${2:H};"},
      {"compute_with", "compute a persistent buffer with its first consumer",
       "compute_with ${1:h};"},
      {"persistent", "keep a value across a reduction",
       "persistent ${1:h} in ${2|registers,shared,recompute|};"},
      {"cache", "stage an input", "cache ${1:x} in ${2|shared,registers|};"},
      {"launch_bounds", "__launch_bounds__(N)", "launch_bounds ${1:256};"},
      {"maxrregcount", "registers a thread at most", "maxrregcount ${1:64};"},
      {"pdl", "programmatic dependent launch", "pdl;"},
      {"grid_sync", "a grid reduction finished in one kernel after a grid barrier", "grid_sync;"},
      {"reduce", "softmax's and LayerNorm's reductions in one pass or two",
       "reduce ${1|one_pass,two_pass|};"},
      {"fast_exp", "f32 exp as the hardware's approximate exponential", "fast_exp;"},
      {"fast_tanh", "f32 tanh as tanh.approx.f32", "fast_tanh;"},
      {"fast_div", "f32 division as div.full.f32", "fast_div;"},
      {"mma", "the matrix product's tiles and instruction",
       "mma over ${1:K}: tile (${2:128}, ${3:256}, ${4:64}), warp (${5:64}, ${6:256}), "
       "instruction wgmma(${7:64}, ${8:256}, ${9:16});"},
      {"pipeline", "TMA stages of the main loop", "pipeline ${1:4} stages via tma;"},
      {"warp_specialize", "a producer warpgroup and consumer warpgroups",
       "warp_specialize producer(regs ${1:40}), consumers(${2:2}, regs ${3:232});"},
      {"tiles", "the order CTAs take tiles in",
       "tiles ${1|one_per_cta,persistent,stream_k,split_k 2|};"},
      {"cluster", "thread-block clusters, with TMA multicast", "cluster (${1:2}, ${2:1});"},
      {"epilogue", "the epilogue's path to memory",
       "epilogue via ${1|registers,shared,shared tma_store|};"},
  };
  for (const auto &[name, doc, snippet] : directives)
    addItem(items, name, CompletionItemKind::Keyword, "directive", doc, snippet);
}

void addWords(std::vector<CompletionItem> &items, llvm::ArrayRef<const char *> words,
              CompletionItemKind kind, llvm::StringRef detail) {
  for (const char *word : words)
    addItem(items, word, kind, detail);
}

/// Keywords that follow the last word of a directive being typed; empty when the
/// directive asks for names there.
bool addDirectiveKeywords(std::vector<CompletionItem> &items, llvm::StringRef statement) {
  llvm::StringRef trimmed = statement.rtrim();
  llvm::StringRef first = statement.take_while([](char c) { return llvm::isAlnum(c) || c == '_'; });
  bool afterSpace = statement.size() != trimmed.size();
  llvm::StringRef lastWord =
      trimmed.rsplit(' ').second.empty() ? trimmed : trimmed.rsplit(' ').second;
  if (trimmed.ends_with("->") && first == "parallelize") {
    addWords(items, {"BIDx", "BIDy", "BIDz", "TIDx", "TIDy", "TIDz"},
             CompletionItemKind::EnumMember, "parallel type");
    return true;
  }
  if (!afterSpace)
    return false;
  if (lastWord == "in" && (first == "persistent" || first == "cache")) {
    if (first == "persistent")
      addWords(items, {"registers", "shared", "recompute"}, CompletionItemKind::EnumMember,
               "memory");
    else
      addWords(items, {"shared", "registers"}, CompletionItemKind::EnumMember, "memory");
    return true;
  }
  if (first == "reduce" && lastWord == "reduce") {
    addWords(items, {"one_pass", "two_pass"}, CompletionItemKind::EnumMember, "reduction form");
    return true;
  }
  if (first == "tiles" && lastWord == "tiles") {
    addWords(items, {"one_per_cta", "persistent", "stream_k", "split_k"},
             CompletionItemKind::EnumMember, "tile order");
    return true;
  }
  if (first == "tiles" && (lastWord == "persistent" || lastWord == "stream_k")) {
    addWords(items, {"swizzle", "hilbert"}, CompletionItemKind::EnumMember, "walk of the tiles");
    return true;
  }
  if (lastWord == "via") {
    if (first == "pipeline")
      addWords(items, {"tma"}, CompletionItemKind::EnumMember, "copy engine");
    else
      addWords(items, {"registers", "shared"}, CompletionItemKind::EnumMember, "epilogue path");
    return true;
  }
  if (first == "split" && (lastWord != "split") && !trimmed.contains("by") &&
      !trimmed.contains("into")) {
    addWords(items, {"by", "into"}, CompletionItemKind::Keyword, "split factor");
    return true;
  }
  return false;
}

void addFusionNames(std::vector<CompletionItem> &items, const SymbolIndex *index,
                    const std::string &fusion) {
  if (!index)
    return;
  std::set<std::string> seen;
  auto add = [&](Symbol::Kind kind, CompletionItemKind itemKind, llvm::StringRef detail) {
    for (const Occurrence *definition : index->definitionsIn(kind, fusion))
      if (seen.insert(definition->symbol.name).second)
        addItem(items, definition->symbol.name, itemKind, detail);
  };
  add(Symbol::Kind::Value, CompletionItemKind::Variable, "value of " + fusion);
  add(Symbol::Kind::Dim, CompletionItemKind::TypeParameter, "dimension of " + fusion);
}

/// Inside a fusion's body or a fn's expression: values, dimensions, fns, builtins, casts.
void addExpressionItems(std::vector<CompletionItem> &items, const Context &context,
                        llvm::StringRef statement, const Analysis *names,
                        const SymbolIndex *index) {
  llvm::StringRef header = context.header;
  if (header.starts_with("fusion")) {
    addFusionNames(items, index, context.fusion);
    if (llvm::Regex("^[A-Za-z_]*$").match(statement))
      addWords(items, {"let"}, CompletionItemKind::Keyword, "binding");
  } else if (index) {
    llvm::SmallVector<llvm::StringRef, 2> match;
    if (llvm::Regex("^fn[ \t]+([A-Za-z_][A-Za-z0-9_]*)").match(header, &match))
      for (const Occurrence *param : index->definitionsIn(Symbol::Kind::FnParam, match[1]))
        addItem(items, param->symbol.name, CompletionItemKind::Variable, "parameter");
  }
  if (index)
    for (const Occurrence *fn : index->definitionsIn(Symbol::Kind::Fn, ""))
      addItem(items, fn->symbol.name, CompletionItemKind::Function,
              fn->symbol.scope == names->path() ? "fn" : "fn from " + fn->symbol.scope);
  // Sema's builtins (sema/Sema.cpp, buildCall).
  addWords(items, {"sum", "mean", "max", "min", "argmax", "argmin"}, CompletionItemKind::Function,
           "reduction: f(x, over D)");
  addWords(items, {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "abs", "pow", "where"},
           CompletionItemKind::Function, "builtin");
  addWords(items, {"bf16", "f16", "f32", "f64", "i32", "i64", "bool"},
           CompletionItemKind::TypeParameter, "cast");
}

void addTargets(std::vector<CompletionItem> &items, const ServerOptions &options) {
  llvm::SmallString<256> dir(options.stdlibDir);
  llvm::sys::path::append(dir, "targets");
  std::error_code error;
  std::vector<std::string> names;
  for (llvm::sys::fs::directory_iterator it(dir, error), end; it != end && !error;
       it.increment(error))
    if (llvm::sys::path::extension(it->path()) == ".toml")
      names.push_back(llvm::sys::path::stem(it->path()).str());
  llvm::sort(names);
  for (const std::string &name : names)
    addItem(items, name, CompletionItemKind::Value, "target (stdlib/targets/" + name + ".toml)");
}

} // namespace

llvm::json::Value completeAt(llvm::StringRef path, llvm::StringRef text,
                             const mlir::lsp::Position &position, const Analysis *names,
                             const SymbolIndex *index, const ServerOptions &options) {
  std::vector<CompletionItem> items;
  LineTable lines(text);
  llvm::StringRef before = text.take_front(lines.offsetOf(position));

  if (llvm::sys::path::filename(path) == "fsl.toml") {
    llvm::StringRef line = before.rsplit('\n').second.empty() && !before.contains('\n')
                               ? before
                               : before.rsplit('\n').second;
    if (llvm::Regex("^[ \t]*target[ \t]*=").match(line))
      addTargets(items, options);
    mlir::lsp::CompletionList list;
    list.items = std::move(items);
    return mlir::lsp::toJSON(list);
  }

  Context context = contextAt(before);
  llvm::StringRef statement = context.statement;
  llvm::StringRef header = context.header;
  if (statement.starts_with("//")) {
    // Inside a comment.
  } else if (context.depth == 0) {
    if (llvm::Regex("^fn[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*\\([^)]*\\)[ \t]*=").match(header)) {
      addExpressionItems(items, context, statement, names, index);
    } else if (llvm::Regex("auto[ \t]*\\([ \t]*[A-Za-z_]*$").match(header)) {
      for (heuristics::Family family : heuristics::kFamilies)
        addItem(items, heuristics::familyName(family), CompletionItemKind::EnumMember,
                "heuristic family",
                "`= auto(" + std::string(heuristics::familyName(family)) +
                    ")`: " + heuristics::knobNames(family));
    } else if (llvm::Regex("^schedule[ \t]+[A-Za-z0-9_]*$").match(header)) {
      if (index)
        for (const Occurrence *fusion : index->definitionsIn(Symbol::Kind::Fusion, ""))
          if (fusion->symbol.scope == names->path())
            addItem(items, fusion->symbol.name, CompletionItemKind::Function, "fusion");
    } else if (llvm::Regex("^(schedule|fusion)[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]").match(header) &&
               header.starts_with("schedule")) {
      addWords(items, {"when"}, CompletionItemKind::Keyword, "guard");
      addWords(items, {"auto"}, CompletionItemKind::Keyword, "heuristics");
    } else if (llvm::Regex("^[A-Za-z_]*$").match(header)) {
      addWords(items, {"fusion", "fn", "schedule", "import"}, CompletionItemKind::Keyword,
               "declaration");
    } else if (llvm::Regex(":[ \t]*[A-Za-z_0-9]*$").match(header) && header.starts_with("fusion")) {
      addWords(items, {"bf16", "f16", "f32", "f64", "i32", "i64", "bool"},
               CompletionItemKind::TypeParameter, "element type");
      addWords(items, {"inout", "strided"}, CompletionItemKind::Keyword, "parameter");
    }
  } else if (header.starts_with("schedule") && header.contains("auto")) {
    if (!statement.contains('='))
      for (const KnobInfo &knob : knobCatalog())
        addItem(items, knob.name, CompletionItemKind::Property, knob.type + ", " + knob.range,
                describeKnob(knob),
                knob.name + " = ${1:" + std::string(knob.type == "bool" ? "true" : "1") + "};");
    else
      addWords(items, {"true", "false"}, CompletionItemKind::Value, "bool");
  } else if (header.starts_with("schedule")) {
    bool atStart = llvm::Regex("^[A-Za-z_]*$").match(statement);
    if (atStart)
      addDirectives(items);
    else if (!addDirectiveKeywords(items, statement)) {
      addFusionNames(items, index, context.fusion);
      // Loops the block made so far (and any that a parse of it knows).
      std::set<std::string> loops;
      llvm::SmallVector<llvm::StringRef, 4> match;
      llvm::StringRef rest = before.substr(before.rfind('{') + 1);
      llvm::Regex made(
          "(->[ \t]*\\(?[ \t]*)([A-Za-z_][A-Za-z0-9_]*)([ \t]*,[ \t]*([A-Za-z_][A-Za-z0-9_]*))?");
      while (made.match(rest, &match)) {
        loops.insert(match[2].str());
        if (!match[4].empty())
          loops.insert(match[4].str());
        rest = rest.substr(rest.find(match[0]) + match[0].size());
      }
      static const std::set<std::string> parallel = {"BIDx", "BIDy", "BIDz",
                                                     "TIDx", "TIDy", "TIDz"};
      for (const std::string &loop : loops)
        if (!parallel.count(loop))
          addItem(items, loop, CompletionItemKind::Field, "loop");
    }
  } else if (header.starts_with("fusion")) {
    addExpressionItems(items, context, statement, names, index);
  }
  mlir::lsp::CompletionList list;
  list.items = std::move(items);
  return mlir::lsp::toJSON(list);
}

} // namespace fsl::lsp
