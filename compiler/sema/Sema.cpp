// Sema.cpp — imports and scopes, then one FusionBuilder per fusion.
#include "sema/Sema.h"

#include "sema/Gradients.h"

#include "support/Identifiers.h"

#include "ir/Describe.h"
#include "ir/Printer.h"
#include "parse/Parser.h"
#include "support/Diagnostics.h"
#include "support/SourceFile.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>

#include <cmath>
#include <cstring>
#include <tuple>

namespace fsl {
namespace {

using namespace ast;
using ir::DimId;
using ir::DType;
using ir::Op;

/// fn calls nested deeper than this are refused (`fn-inline-too-deep`): inlining
/// recurses on the stack, and no real helper chain comes close (docs/language.md).
constexpr size_t kMaxInlineDepth = 256;
/// Operations a fusion may have (`fusion-too-large`): shared values keep repeated fn
/// calls cheap, but calls with distinct arguments at every level multiply, and 200,000
/// operations already take seconds and a gigabyte to generate code for.
constexpr size_t kMaxFusionValues = 200000;

// ---------------------------------------------------------------------------
// Scopes and imports
// ---------------------------------------------------------------------------

struct Scope;

struct FnEntry {
  const FnDecl *decl = nullptr;
  const Scope *scope = nullptr; // where its body's names resolve
};

/// What one file sees: its own fns and those of the files it imports directly.
struct Scope {
  std::map<std::string, FnEntry> ownFns;
  std::map<std::string, FnEntry> fns;
  /// Fusions declared in this file, and those of the files it imports directly: not
  /// visible (an import brings only fns), but named when a schedule asks for one.
  std::map<std::string, const FusionDecl *> ownFusions;
  std::map<std::string, std::pair<const FusionDecl *, std::string>> importedFusions;
};

class ModuleLoader {
public:
  ModuleLoader(llvm::SourceMgr &sources, DiagnosticEngine &diagnostics, const SemaOptions &options,
               Program &program)
      : sources_(sources), diagnostics_(diagnostics), options_(options), program_(program) {}

  const Scope *load(const File &file, std::vector<std::string> &stack) {
    auto scope = std::make_unique<Scope>();
    Scope *result = scope.get();
    scopes_.push_back(std::move(scope));
    for (const DeclPtr &decl : file.decls) {
      if (const auto *fn = llvm::dyn_cast<FnDecl>(decl.get()))
        define(*result, result->ownFns, *fn, fn->name.range, result);
      else if (const auto *fusion = llvm::dyn_cast<FusionDecl>(decl.get()))
        result->ownFusions.emplace(fusion->name.text, fusion);
    }
    result->fns = result->ownFns;
    for (const DeclPtr &decl : file.decls) {
      const auto *import = llvm::dyn_cast<ImportDecl>(decl.get());
      if (!import)
        continue;
      const Scope *imported = loadImport(file, *import, stack);
      if (!imported)
        continue;
      for (const auto &[name, fusion] : imported->ownFusions)
        result->importedFusions.emplace(name, std::make_pair(fusion, import->path));
      for (const auto &[name, entry] : imported->ownFns) {
        auto [it, inserted] = result->fns.emplace(name, entry);
        if (!inserted && it->second.decl != entry.decl)
          diagnostics_.report(DiagId::Redefinition, import->pathRange, name)
              .note(DiagId::NoteDeclaredHere, it->second.decl->name.range, name, "")
              .note(DiagId::NoteDeclaredHere, entry.decl->name.range, name, " (imported)");
      }
    }
    return result;
  }

private:
  void define(Scope &scope, std::map<std::string, FnEntry> &table, const FnDecl &fn,
              llvm::SMRange at, const Scope *home) {
    auto [it, inserted] = table.emplace(fn.name.text, FnEntry{&fn, home});
    if (!inserted)
      diagnostics_.report(DiagId::Redefinition, at, fn.name.text)
          .note(DiagId::NoteDeclaredHere, it->second.decl->name.range, fn.name.text, "");
  }

  std::optional<std::string> resolve(const File &from, const std::string &path,
                                     std::vector<std::string> &searched) {
    std::vector<std::string> dirs;
    dirs.push_back(llvm::sys::path::parent_path(from.path).str());
    dirs.insert(dirs.end(), options_.includeDirs.begin(), options_.includeDirs.end());
    if (!options_.stdlibDir.empty())
      dirs.push_back(options_.stdlibDir);
    for (const std::string &dir : dirs) {
      llvm::SmallString<256> candidate(dir.empty() ? "." : dir);
      llvm::sys::path::append(candidate, path);
      searched.push_back(std::string(candidate));
      if (llvm::sys::fs::is_regular_file(candidate))
        return std::string(candidate);
    }
    return std::nullopt;
  }

  const Scope *loadImport(const File &from, const ImportDecl &import,
                          std::vector<std::string> &stack) {
    std::vector<std::string> searched;
    std::optional<std::string> found = resolve(from, import.path, searched);
    if (!found) {
      diagnostics_.report(DiagId::ImportNotFound, import.pathRange, import.path)
          .note(DiagId::NoteSearched, llvm::SMRange(), llvm::join(searched, ", "));
      return nullptr;
    }
    llvm::SmallString<256> canonical;
    if (llvm::sys::fs::real_path(*found, canonical))
      canonical = *found;
    std::string key(canonical);
    auto onStack = std::find(stack.begin(), stack.end(), key);
    if (onStack != stack.end()) {
      std::vector<std::string> chain;
      for (auto it = onStack; it != stack.end(); ++it)
        chain.push_back("'" + llvm::sys::path::filename(*it).str() + "'");
      chain.push_back("'" + llvm::sys::path::filename(key).str() + "'");
      diagnostics_.report(DiagId::ImportCycle, import.pathRange, import.path,
                          llvm::join(chain, " -> "));
      return nullptr;
    }
    if (auto it = loaded_.find(key); it != loaded_.end())
      return it->second;
    SourceFile read = readSourceFile(*found);
    if (read.status == SourceFile::Status::TooLarge) {
      diagnostics_.report(DiagId::InputTooLarge, import.pathRange, *found,
                          std::to_string(read.size), kMaxSourceBytes);
      return nullptr;
    }
    if (read.status != SourceFile::Status::Ok) {
      diagnostics_.report(DiagId::ImportNotFound, import.pathRange, import.path)
          .note(DiagId::NoteSearched, llvm::SMRange(), *found + " (" + read.message + ")");
      return nullptr;
    }
    unsigned id = sources_.AddNewSourceBuffer(std::move(read.buffer), import.pathRange.Start);
    std::unique_ptr<File> file = parseFile(sources_, id, diagnostics_);
    if (!file)
      return nullptr;
    const File &ref = *file;
    program_.imported.push_back(std::move(file));
    stack.push_back(key);
    const Scope *scope = load(ref, stack);
    stack.pop_back();
    loaded_[key] = scope;
    return scope;
  }

  llvm::SourceMgr &sources_;
  DiagnosticEngine &diagnostics_;
  const SemaOptions &options_;
  Program &program_;
  std::vector<std::unique_ptr<Scope>> scopes_;
  std::map<std::string, const Scope *> loaded_;

public:
  /// Keeps scopes alive as long as the loader.
  std::vector<std::unique_ptr<Scope>> &scopes() { return scopes_; }
};

// ---------------------------------------------------------------------------
// Building one fusion
// ---------------------------------------------------------------------------

DType toDType(ElementType type) {
  switch (type) {
  case ElementType::Bool:
    return DType::Bool;
  case ElementType::I32:
    return DType::I32;
  case ElementType::I64:
    return DType::I64;
  case ElementType::F16:
    return DType::F16;
  case ElementType::BF16:
    return DType::BF16;
  case ElementType::F32:
    return DType::F32;
  case ElementType::F64:
    return DType::F64;
  }
  return DType::F32;
}

/// An expression's result: an IR value, or a literal whose type is not fixed yet.
struct Typed {
  ir::Value *value = nullptr;
  double literal = 0;
  bool literalIsFloat = false;
  bool literalIsBool = false;
  std::string spelling;
  llvm::SMRange range;
  // Where the name it was read from was declared, for notes.
  std::string declaredName;
  llvm::SMRange declaredAt;
  bool isLiteral() const { return value == nullptr; }
};

struct Binding {
  Typed expr;
  bool isOutputName = false;
  /// A let whose value had errors: reading it says nothing more.
  bool poisoned = false;
};

class FusionBuilder {
public:
  FusionBuilder(const FusionDecl &decl, const Scope &scope, DiagnosticEngine &diagnostics,
                const SemaOptions &options)
      : decl_(decl), scope_(scope), diagnostics_(diagnostics), options_(options) {}

  std::unique_ptr<ir::Fusion> build() {
    fusion_ = std::make_unique<ir::Fusion>();
    fusion_->name = decl_.name.text;
    fusion_->range = decl_.range;
    unsigned errorsBefore = diagnostics_.errorCount();
    declareStaticDims();
    declareParams();
    declareOutputs();
    for (const Statement &statement : decl_.body) {
      buildStatement(statement);
      // Every later phase is linear in the operations, but not free: a bound keeps a
      // fusion in seconds and megabytes (docs/language.md).
      if (fusion_->values.size() > kMaxFusionValues && !limitReported_) {
        limitReported_ = true;
        diagnostics_.report(DiagId::FusionTooLarge, statement.range, fusion_->name,
                            kMaxFusionValues, "at this statement");
      }
      if (limitReported_)
        break; // what follows would only repeat it, or miss what was cut off
    }
    if (!limitReported_)
      checkAllWritten();
    if (diagnostics_.errorCount() != errorsBefore)
      return nullptr;
    fusion_->removeDeadValues();
    return std::move(fusion_);
  }

private:
  // --- Signature --------------------------------------------------------------------

  void declareStaticDims() {
    for (const StaticDim &dim : decl_.staticDims) {
      if (staticValues_.count(dim.name.text)) {
        diagnostics_.report(DiagId::Redefinition, dim.name.range, dim.name.text)
            .note(DiagId::NoteDeclaredHere, staticAt_[dim.name.text], dim.name.text, "");
        continue;
      }
      staticAt_[dim.name.text] = dim.name.range;
      std::optional<int64_t> value;
      if (auto define = options_.defines.find(dim.name.text); define != options_.defines.end())
        value = define->second;
      else if (dim.value)
        value = dim.value->value;
      if (!value) {
        diagnostics_.report(DiagId::StaticDimNoValue, dim.name.range, dim.name.text);
        value = 1;
      } else if (*value <= 0) {
        diagnostics_.report(DiagId::InvalidStaticDim, dim.value ? dim.value->range : dim.name.range,
                            dim.name.text, *value);
        value = 1;
      }
      staticValues_[dim.name.text] = *value;
    }
  }

  /// The fusion dimensions of a declared type, created on first appearance.
  std::vector<DimId> typeDims(const Type &type, bool create, llvm::StringRef what) {
    std::vector<DimId> dims;
    std::map<std::string, llvm::SMRange> seen;
    for (const Name &dim : type.dims) {
      if (auto [it, inserted] = seen.emplace(dim.text, dim.range); !inserted) {
        diagnostics_.report(DiagId::DuplicateDim, dim.range, dim.text, what)
            .note(DiagId::NoteDeclaredHere, it->second, dim.text, "");
        continue;
      }
      std::optional<DimId> id = fusion_->findDim(dim.text);
      if (!id && create) {
        ir::Dim newDim{dim.text, std::nullopt, dim.range};
        if (auto it = staticValues_.find(dim.text); it != staticValues_.end())
          newDim.staticExtent = it->second;
        fusion_->dims.push_back(newDim);
        id = static_cast<DimId>(fusion_->dims.size() - 1);
      }
      if (!id) {
        reportUnknownDim(dim);
        continue;
      }
      dims.push_back(*id);
    }
    return dims;
  }

  void reportUnknownDim(const Name &dim) {
    std::vector<std::string> names;
    for (const ir::Dim &d : fusion_->dims)
      names.push_back(d.name);
    diagnostics_.report(DiagId::UnknownDim, dim.range, dim.text,
                        names.empty() ? std::string("none") : llvm::join(names, ", "));
  }

  bool defineName(const Name &name, Binding binding) {
    if (auto it = env_.find(name.text); it != env_.end()) {
      diagnostics_.report(DiagId::Redefinition, name.range, name.text)
          .note(DiagId::NoteDeclaredHere, it->second.expr.declaredAt, name.text, "");
      return false;
    }
    env_.emplace(name.text, std::move(binding));
    return true;
  }

  void declareParams() {
    for (unsigned index = 0; index < decl_.params.size(); ++index) {
      const ast::Param &param = decl_.params[index];
      ir::Param irParam;
      irParam.name = param.name.text;
      irParam.dtype = toDType(param.type.element);
      unsigned errorsBefore = diagnostics_.errorCount();
      irParam.dims = typeDims(param.type, /*create=*/true, "type");
      bool broken = diagnostics_.errorCount() != errorsBefore;
      irParam.isInout = param.isInout;
      irParam.isStrided = param.isStrided;
      irParam.range = param.range;
      if (param.defaultValue)
        irParam.defaultValue = defaultValue(param);
      auto value = std::make_unique<ir::Value>();
      value->op = param.type.isScalar() ? Op::Scalar : Op::Input;
      value->dtype = irParam.dtype;
      value->dims = sorted(irParam.dims);
      value->name = param.name.text;
      value->paramIndex = index;
      value->range = param.name.range;
      irParam.value = fusion_->addValue(std::move(value));
      Typed typed;
      typed.value = const_cast<ir::Value *>(irParam.value);
      typed.declaredName = param.name.text;
      typed.declaredAt = param.name.range;
      typed.range = param.name.range;
      fusion_->params.push_back(irParam);
      defineName(param.name, Binding{typed, false, broken});
      if (param.isInout)
        inoutParams_[param.name.text] = index;
    }
  }

  std::optional<double> defaultValue(const ast::Param &param) {
    if (!param.type.isScalar()) {
      diagnostics_.report(DiagId::InvalidDefault, param.defaultValue->range,
                          "only scalar parameters take a default value");
      return std::nullopt;
    }
    const Expr *expr = param.defaultValue.get();
    bool negate = false;
    if (const auto *unary = llvm::dyn_cast<UnaryExpr>(expr);
        unary && unary->op == UnaryOp::Negate) {
      negate = true;
      expr = unary->operand.get();
    }
    const auto *literal = llvm::dyn_cast<LiteralExpr>(expr);
    if (!literal || literal->literalKind == LiteralExpr::LiteralKind::Bool) {
      if (literal && !negate && toDType(param.type.element) == DType::Bool)
        return literal->boolValue ? 1.0 : 0.0;
      diagnostics_.report(DiagId::InvalidDefault, param.defaultValue->range,
                          "a default value must be a number literal, such as 1e-6 or -1");
      return std::nullopt;
    }
    double value = literal->literalKind == LiteralExpr::LiteralKind::Int
                       ? static_cast<double>(literal->intValue)
                       : literal->floatValue;
    if (literal->literalKind == LiteralExpr::LiteralKind::Float &&
        !ir::isFloat(toDType(param.type.element))) {
      diagnostics_.report(DiagId::InvalidDefault, param.defaultValue->range,
                          "a floating-point default for a parameter of type " +
                              ir::dtypeName(toDType(param.type.element)).str());
      return std::nullopt;
    }
    return negate ? -value : value;
  }

  void declareOutputs() {
    for (const ast::Output &output : decl_.outputs) {
      ir::Output irOutput;
      irOutput.name = output.name.text;
      irOutput.dtype = toDType(output.type.element);
      unsigned errorsBefore = diagnostics_.errorCount();
      irOutput.dims = typeDims(output.type, /*create=*/true, "type");
      if (diagnostics_.errorCount() != errorsBefore)
        brokenOutputs_.insert(output.name.text);
      irOutput.range = output.range;
      Typed typed;
      typed.declaredName = output.name.text;
      typed.declaredAt = output.name.range;
      if (defineName(output.name, Binding{typed, true}))
        outputIndex_[output.name.text] = fusion_->outputs.size();
      fusion_->outputs.push_back(irOutput);
    }
  }

  // --- Statements -------------------------------------------------------------------

  void buildStatement(const Statement &statement) {
    std::optional<Typed> value = build(*statement.value);
    if (statement.isLet && value && statement.declaredType) {
      unsigned errorsBefore = diagnostics_.errorCount();
      std::vector<DimId> dims = typeDims(*statement.declaredType, false, "type");
      if (diagnostics_.errorCount() != errorsBefore)
        value.reset();
      else
        value = conform(*value, toDType(statement.declaredType->element), dims,
                        statement.target.text, statement.declaredType->range);
    }
    if (!value) {
      // Errors were reported: keep the name known so that later uses say nothing more.
      Typed poisoned;
      poisoned.declaredAt = statement.target.range;
      if (statement.isLet)
        defineName(statement.target, Binding{poisoned, false, true});
      else if (!assignedAt_.count(statement.target.text))
        assignedAt_[statement.target.text] = statement.target.range;
      return;
    }
    if (statement.isLet) {
      if (value->value && value->value->name.empty())
        value->value->name = statement.target.text;
      else if (value->value && value->value->name != statement.target.text &&
               value->value->op != Op::Input && value->value->op != Op::Scalar)
        // Another let computed the same value first (values are shared): schedules may
        // name it by either.
        value->value->aliases.push_back(statement.target.text);
      value->declaredName = statement.target.text;
      value->declaredAt = statement.target.range;
      defineName(statement.target, Binding{*value, false});
      return;
    }
    assign(statement, *value);
  }

  void assign(const Statement &statement, Typed value) {
    const std::string &name = statement.target.text;
    auto binding = env_.find(name);
    auto inout = inoutParams_.find(name);
    bool isOutput = outputIndex_.count(name) != 0;
    if (!isOutput && inout == inoutParams_.end()) {
      auto report = diagnostics_.report(DiagId::AssignToNonOutput, statement.target.range, name);
      if (binding != env_.end())
        report.note(DiagId::NoteDeclaredHere, binding->second.expr.declaredAt, name, "");
      return;
    }
    if (auto previous = assignedAt_.find(name); previous != assignedAt_.end()) {
      diagnostics_.report(DiagId::OutputAssignedTwice, statement.target.range, name)
          .note(DiagId::NoteAssignedHere, previous->second, name);
      return;
    }
    assignedAt_[name] = statement.target.range;
    if (brokenOutputs_.count(name))
      return;
    if (isOutput) {
      ir::Output &output = fusion_->outputs[outputIndex_[name]];
      std::optional<Typed> stored =
          conform(value, output.dtype, output.dims, name, binding->second.expr.declaredAt);
      if (stored)
        output.value = stored->value;
      return;
    }
    const ir::Param &param = fusion_->params[inout->second];
    std::optional<Typed> stored = conform(value, param.dtype, param.dims, name, param.range);
    if (!stored)
      return;
    ir::Output writeBack;
    writeBack.name = name;
    writeBack.dtype = param.dtype;
    writeBack.dims = param.dims;
    writeBack.value = stored->value;
    writeBack.isInout = true;
    writeBack.paramIndex = inout->second;
    writeBack.range = statement.range;
    fusion_->outputs.push_back(writeBack);
  }

  /// Checks that `value` has exactly `dtype` and the dimensions `dims` (in any order).
  std::optional<Typed> conform(Typed value, DType dtype, const std::vector<DimId> &dims,
                               const std::string &name, llvm::SMRange declaredAt) {
    std::string declared = ir::typeString(*fusion_, dtype, dims);
    if (value.isLiteral()) {
      std::optional<Typed> materialized = materialize(value, dtype);
      if (!materialized)
        return std::nullopt;
      value = *materialized;
    }
    if (value.value->dtype != dtype) {
      diagnostics_
          .report(DiagId::TypeMismatch, value.range,
                  llvm::formatv("'{0}' is declared {1} but the value is {2}; cast it: {3}(...)",
                                name, declared, describe(value), ir::dtypeName(dtype))
                      .str())
          .note(DiagId::NoteDeclaredHere, declaredAt, name, " as " + declared);
      return std::nullopt;
    }
    if (sorted(dims) != value.value->dims) {
      diagnostics_
          .report(DiagId::DimMismatch, value.range,
                  llvm::formatv("'{0}' is declared {1} but the value is {2}", name, declared,
                                describe(value))
                      .str())
          .note(DiagId::NoteDeclaredHere, declaredAt, name, " as " + declared);
      return std::nullopt;
    }
    return value;
  }

  void checkAllWritten() {
    for (const ast::Output &output : decl_.outputs)
      if (!assignedAt_.count(output.name.text) && outputIndex_.count(output.name.text))
        diagnostics_.report(DiagId::OutputNotAssigned, output.name.range, output.name.text);
    for (const ast::Param &param : decl_.params)
      if (param.isInout && !assignedAt_.count(param.name.text))
        diagnostics_.report(DiagId::InoutNotWritten, param.name.range, param.name.text);
  }

  // --- Expressions ------------------------------------------------------------------

  std::vector<DimId> sorted(std::vector<DimId> dims) const {
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    return dims;
  }

  std::vector<DimId> unionDims(std::initializer_list<const ir::Value *> values) const {
    std::vector<DimId> dims;
    for (const ir::Value *value : values)
      dims.insert(dims.end(), value->dims.begin(), value->dims.end());
    return sorted(dims);
  }

  std::string describe(const Typed &typed) const {
    if (typed.isLiteral())
      return "the literal " + typed.spelling;
    return ir::typeString(*fusion_, typed.value->dtype, typed.value->dims);
  }

  void noteDeclaration(DiagnosticBuilder &report, const Typed &typed) {
    if (!typed.declaredName.empty() && typed.declaredAt.Start.isValid())
      report.note(DiagId::NoteDeclaredHere, typed.declaredAt, typed.declaredName,
                  " as " + describe(typed));
  }

  /// The value of `op` on `operands`: an existing identical one when there is one (fns
  /// are inlined at every call, so the same subexpression is built again and again; one
  /// value keeps the IR, and every phase after it, as large as the distinct
  /// computations), else a new one. Its range is that of the first occurrence.
  ir::Value *add(Op op, DType dtype, std::vector<const ir::Value *> operands, llvm::SMRange range,
                 std::vector<DimId> dims, std::vector<DimId> reduced = {}, double constant = 0,
                 llvm::StringRef spelling = "", std::vector<DimId> indexed = {}) {
    ValueKey key{op, dtype, {}, dims, reduced, 0, spelling.str(), indexed};
    for (const ir::Value *operand : operands)
      key.operands.push_back(operand->id);
    std::memcpy(&key.constantBits, &constant, sizeof constant);
    if (auto it = values_.find(key); it != values_.end())
      return it->second;
    auto value = std::make_unique<ir::Value>();
    value->op = op;
    value->dtype = dtype;
    value->operands = std::move(operands);
    value->range = range;
    value->dims = std::move(dims);
    value->reduced = std::move(reduced);
    value->indexed = std::move(indexed);
    value->constant = constant;
    value->constantSpelling = spelling.str();
    ir::Value *added = fusion_->addValue(std::move(value));
    values_.emplace(std::move(key), added);
    return added;
  }

  /// What makes two values the same computation (names and ranges do not).
  struct ValueKey {
    Op op;
    DType dtype;
    std::vector<unsigned> operands; // value ids
    std::vector<DimId> dims, reduced;
    uint64_t constantBits;
    std::string spelling;
    std::vector<DimId> indexed;
    bool operator<(const ValueKey &other) const {
      return std::tie(op, dtype, operands, dims, reduced, constantBits, spelling, indexed) <
             std::tie(other.op, other.dtype, other.operands, other.dims, other.reduced,
                      other.constantBits, other.spelling, other.indexed);
    }
  };

  /// A literal takes `dtype`; a float literal cannot become an integer or bool.
  std::optional<Typed> materialize(const Typed &literal, DType dtype) {
    if (literal.literalIsBool != (dtype == DType::Bool) ||
        (literal.literalIsFloat && !ir::isFloat(dtype))) {
      diagnostics_.report(DiagId::TypeMismatch, literal.range,
                          llvm::formatv("the literal {0} cannot take type {1}", literal.spelling,
                                        ir::dtypeName(dtype))
                              .str());
      return std::nullopt;
    }
    ir::Value *value =
        add(Op::Constant, dtype, {}, literal.range, {}, {}, literal.literal, literal.spelling);
    Typed result = literal;
    result.value = value;
    return result;
  }

  /// The type a lone literal gets when nothing else decides: f32, i32 or bool.
  DType defaultType(const Typed &literal) const {
    if (literal.literalIsBool)
      return DType::Bool;
    return literal.literalIsFloat ? DType::F32 : DType::I32;
  }

  std::optional<Typed> materializeDefault(const Typed &typed) {
    return typed.isLiteral() ? materialize(typed, defaultType(typed)) : std::optional<Typed>(typed);
  }

  /// Gives operands one type: literals adopt the other's; values must already agree.
  bool unify(std::vector<Typed *> operands, llvm::SMRange range, llvm::StringRef what) {
    const Typed *typedOne = nullptr;
    for (Typed *operand : operands)
      if (!operand->isLiteral()) {
        typedOne = operand;
        break;
      }
    DType dtype = typedOne ? typedOne->value->dtype : defaultType(*operands[0]);
    for (Typed *operand : operands) {
      if (operand->isLiteral()) {
        std::optional<Typed> materialized = materialize(*operand, dtype);
        if (!materialized)
          return false;
        *operand = *materialized;
      } else if (operand->value->dtype != dtype) {
        auto report = diagnostics_.report(
            DiagId::TypeMismatch, range,
            llvm::formatv(
                "{0} of {1} and {2}: tensor types are never converted implicitly; "
                "cast one side, as in {3}(...)",
                what, describe(*typedOne), describe(*operand),
                ir::dtypeName(ir::dtypeBytes(dtype) >= ir::dtypeBytes(operand->value->dtype)
                                  ? dtype
                                  : operand->value->dtype))
                .str());
        noteDeclaration(report, *typedOne);
        noteDeclaration(report, *operand);
        return false;
      }
    }
    return true;
  }

  std::optional<Typed> build(const Expr &expr) {
    switch (expr.kind()) {
    case Expr::Kind::Literal:
      return buildLiteral(llvm::cast<LiteralExpr>(expr));
    case Expr::Kind::NameRef:
      return buildName(llvm::cast<NameExpr>(expr));
    case Expr::Kind::Paren: {
      std::optional<Typed> inner = build(*llvm::cast<ParenExpr>(expr).inner);
      if (inner)
        inner->range = expr.range;
      return inner;
    }
    case Expr::Kind::Cast:
      return buildCast(llvm::cast<CastExpr>(expr));
    case Expr::Kind::Unary:
      return buildUnary(llvm::cast<UnaryExpr>(expr));
    case Expr::Kind::Binary:
      return buildBinary(llvm::cast<BinaryExpr>(expr));
    case Expr::Kind::Call:
      return buildCall(llvm::cast<CallExpr>(expr));
    case Expr::Kind::Index:
      return buildIndex(llvm::cast<IndexExpr>(expr));
    }
    return std::nullopt;
  }

  std::optional<Typed> buildLiteral(const LiteralExpr &literal) {
    Typed typed;
    typed.range = literal.range;
    typed.spelling = literal.spelling;
    switch (literal.literalKind) {
    case LiteralExpr::LiteralKind::Int:
      typed.literal = static_cast<double>(literal.intValue);
      break;
    case LiteralExpr::LiteralKind::Float:
      typed.literal = literal.floatValue;
      typed.literalIsFloat = true;
      break;
    case LiteralExpr::LiteralKind::Bool:
      typed.literal = literal.boolValue ? 1 : 0;
      typed.literalIsBool = true;
      break;
    }
    return typed;
  }

  std::optional<Typed> buildName(const NameExpr &name) {
    // Inside an inlined fn, its parameters come first.
    if (!fnFrames_.empty()) {
      auto &frame = fnFrames_.back();
      if (auto it = frame.args.find(name.name.text); it != frame.args.end()) {
        Typed typed = it->second;
        typed.range = name.range;
        return typed;
      }
      if (std::optional<Typed> extent = dimExtentInIndex(name))
        return extent;
      diagnostics_.report(DiagId::UnknownName, name.range, name.name.text);
      return std::nullopt;
    }
    auto it = env_.find(name.name.text);
    if (it == env_.end()) {
      if (std::optional<Typed> extent = dimExtentInIndex(name))
        return extent;
      diagnostics_.report(DiagId::UnknownName, name.range, name.name.text);
      return std::nullopt;
    }
    if (it->second.poisoned)
      return std::nullopt;
    if (it->second.isOutputName) {
      diagnostics_.report(DiagId::OutputRead, name.range, name.name.text)
          .note(DiagId::NoteDeclaredHere, it->second.expr.declaredAt, name.name.text, "");
      return std::nullopt;
    }
    Typed typed = it->second.expr;
    typed.range = name.range;
    return typed;
  }

  std::optional<Typed> buildCast(const CastExpr &cast) {
    std::optional<Typed> operand = build(*cast.operand);
    if (!operand)
      return std::nullopt;
    DType to = toDType(cast.to);
    if (operand->isLiteral()) {
      Typed literal = *operand;
      literal.literalIsFloat = ir::isFloat(to);
      literal.literalIsBool = to == DType::Bool;
      if (!literal.literalIsFloat && !literal.literalIsBool)
        literal.literal = std::trunc(literal.literal);
      std::optional<Typed> constant = materialize(literal, to);
      if (constant)
        constant->range = cast.range;
      return constant;
    }
    Typed result;
    result.value = add(Op::Cast, to, {operand->value}, cast.range, operand->value->dims);
    result.range = cast.range;
    return result;
  }

  std::optional<Typed> buildUnary(const UnaryExpr &unary) {
    std::optional<Typed> operand = build(*unary.operand);
    if (!operand)
      return std::nullopt;
    if (operand->isLiteral() && unary.op == UnaryOp::Negate && !operand->literalIsBool) {
      operand->literal = -operand->literal;
      operand->spelling = "-" + operand->spelling;
      operand->range = unary.range;
      return operand;
    }
    if (unary.op == UnaryOp::Not)
      return pointwise(Op::Not, {*operand}, unary.range, "'!'", Operands::Bool);
    return pointwise(Op::Neg, {*operand}, unary.range, "'-'", Operands::Numeric);
  }

  enum class Operands { Numeric, Float, Bool, Any };

  std::optional<Typed> pointwise(Op op, std::vector<Typed> operands, llvm::SMRange range,
                                 llvm::StringRef what, Operands need, bool resultIsBool = false) {
    std::vector<Typed *> pointers;
    for (Typed &operand : operands)
      pointers.push_back(&operand);
    if (!unify(pointers, range, what))
      return std::nullopt;
    DType dtype = operands[0].value->dtype;
    bool ok = need == Operands::Any || (need == Operands::Bool && dtype == DType::Bool) ||
              (need == Operands::Float && ir::isFloat(dtype)) ||
              (need == Operands::Numeric && dtype != DType::Bool);
    if (!ok) {
      const char *wanted = need == Operands::Bool    ? "bool"
                           : need == Operands::Float ? "floating-point"
                                                     : "numeric";
      auto report = diagnostics_.report(
          DiagId::InvalidOperandType, range,
          llvm::formatv("{0} needs {1} operands, not {2}", what, wanted, ir::dtypeName(dtype))
              .str());
      noteDeclaration(report, operands[0]);
      return std::nullopt;
    }
    std::vector<const ir::Value *> values;
    for (const Typed &operand : operands)
      values.push_back(operand.value);
    std::vector<DimId> dims;
    for (const ir::Value *value : values)
      dims.insert(dims.end(), value->dims.begin(), value->dims.end());
    Typed result;
    result.value = add(op, resultIsBool ? DType::Bool : dtype, values, range, sorted(dims));
    result.range = range;
    return result;
  }

  static std::optional<double> fold(BinaryOp op, double a, double b) {
    switch (op) {
    case BinaryOp::Add:
      return a + b;
    case BinaryOp::Sub:
      return a - b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Div:
      return a / b;
    default:
      return std::nullopt;
    }
  }

  std::optional<Typed> buildBinary(const BinaryExpr &binary) {
    std::optional<Typed> lhs = build(*binary.lhs);
    std::optional<Typed> rhs = build(*binary.rhs);
    if (!lhs || !rhs)
      return std::nullopt;
    std::string what = ("'" + binaryOpSpelling(binary.op) + "'").str();
    if (lhs->isLiteral() && rhs->isLiteral() && !lhs->literalIsBool && !rhs->literalIsBool) {
      bool integer = !lhs->literalIsFloat && !rhs->literalIsFloat;
      if (std::optional<double> folded = fold(binary.op, lhs->literal, rhs->literal);
          folded && !(integer && binary.op == BinaryOp::Div)) {
        Typed result = *lhs;
        result.literal = *folded;
        result.literalIsFloat = !integer;
        result.range = binary.range;
        std::string text;
        llvm::raw_string_ostream(text) << llvm::format(integer ? "%.0f" : "%.17g", *folded);
        result.spelling = text;
        return result;
      }
    }
    switch (binary.op) {
    case BinaryOp::Add:
      return pointwise(Op::Add, {*lhs, *rhs}, binary.range, what, Operands::Numeric);
    case BinaryOp::Sub:
      return pointwise(Op::Sub, {*lhs, *rhs}, binary.range, what, Operands::Numeric);
    case BinaryOp::Mul:
      return pointwise(Op::Mul, {*lhs, *rhs}, binary.range, what, Operands::Numeric);
    case BinaryOp::Div:
      return pointwise(Op::Div, {*lhs, *rhs}, binary.range, what, Operands::Numeric);
    case BinaryOp::Lt:
      return pointwise(Op::Lt, {*lhs, *rhs}, binary.range, what, Operands::Numeric, true);
    case BinaryOp::Le:
      return pointwise(Op::Le, {*lhs, *rhs}, binary.range, what, Operands::Numeric, true);
    case BinaryOp::Gt:
      return pointwise(Op::Gt, {*lhs, *rhs}, binary.range, what, Operands::Numeric, true);
    case BinaryOp::Ge:
      return pointwise(Op::Ge, {*lhs, *rhs}, binary.range, what, Operands::Numeric, true);
    case BinaryOp::Eq:
      return pointwise(Op::Eq, {*lhs, *rhs}, binary.range, what, Operands::Any, true);
    case BinaryOp::Ne:
      return pointwise(Op::Ne, {*lhs, *rhs}, binary.range, what, Operands::Any, true);
    case BinaryOp::And:
      return pointwise(Op::And, {*lhs, *rhs}, binary.range, what, Operands::Bool);
    case BinaryOp::Or:
      return pointwise(Op::Or, {*lhs, *rhs}, binary.range, what, Operands::Bool);
    }
    return std::nullopt;
  }

  // --- Calls ------------------------------------------------------------------------

  struct FnFrame {
    const FnDecl *fn;
    std::map<std::string, Typed> args;
    const Scope *scope;
  };

  const Scope &currentScope() const { return fnFrames_.empty() ? scope_ : *fnFrames_.back().scope; }

  bool checkArgs(const CallExpr &call, size_t expected) {
    if (call.args.size() == expected)
      return true;
    diagnostics_.report(DiagId::WrongArgumentCount, call.range, call.callee.text, expected,
                        call.args.size());
    return false;
  }

  std::optional<Typed> buildCall(const CallExpr &call) {
    const std::string &name = call.callee.text;
    const Scope &scope = currentScope();
    if (auto fn = scope.fns.find(name); fn != scope.fns.end())
      return inlineFn(call, fn->second);

    static const std::map<std::string, Op> reductions = {
        {"sum", Op::ReduceSum}, {"mean", Op::ReduceMean},     {"max", Op::ReduceMax},
        {"min", Op::ReduceMin}, {"argmax", Op::ReduceArgMax}, {"argmin", Op::ReduceArgMin}};
    static const std::map<std::string, Op> unaryMath = {
        {"exp", Op::Exp},   {"log", Op::Log},         {"sqrt", Op::Sqrt}, {"rsqrt", Op::Rsqrt},
        {"tanh", Op::Tanh}, {"sigmoid", Op::Sigmoid}, {"erf", Op::Erf},   {"abs", Op::Abs}};
    if (name == "index")
      return buildDimIndex(call);
    bool isReductionName = reductions.count(name) != 0;
    bool isKnown = isReductionName || unaryMath.count(name) || name == "pow" || name == "where";
    if (!isKnown) {
      auto report = diagnostics_.report(DiagId::UnknownFunction, call.callee.range, name);
      // A fusion is a kernel, not a function: say so when the name is one.
      const FusionDecl *fusion = nullptr;
      if (auto own = scope.ownFusions.find(name); own != scope.ownFusions.end())
        fusion = own->second;
      else if (auto imported = scope.importedFusions.find(name);
               imported != scope.importedFusions.end())
        fusion = imported->second.first;
      if (fusion)
        report.note(DiagId::NoteDeclaredHere, fusion->name.range, name,
                    " as a fusion; fusions cannot be called: write the shared computation as "
                    "an fn");
      return std::nullopt;
    }
    if (!call.overDims.empty() && !isReductionName) {
      diagnostics_.report(DiagId::UnexpectedOver, call.overRange, name);
      return std::nullopt;
    }
    std::vector<Typed> args;
    for (const ExprPtr &arg : call.args) {
      std::optional<Typed> built = build(*arg);
      if (!built)
        return std::nullopt;
      args.push_back(*built);
    }
    if (isReductionName) {
      bool elementwise =
          (name == "max" || name == "min") && call.overDims.empty() && args.size() == 2;
      if (elementwise)
        return pointwise(name == "max" ? Op::Max : Op::Min, args, call.range, "'" + name + "'",
                         Operands::Numeric);
      if (call.overDims.empty()) {
        diagnostics_.report(DiagId::MissingOver, call.range, name);
        return std::nullopt;
      }
      if (!checkArgs(call, 1))
        return std::nullopt;
      return reduce(reductions.at(name), args[0], call);
    }
    if (name == "where") {
      if (!checkArgs(call, 3))
        return std::nullopt;
      std::optional<Typed> condition =
          args[0].isLiteral() ? materialize(args[0], DType::Bool) : std::optional<Typed>(args[0]);
      if (!condition)
        return std::nullopt;
      if (condition->value->dtype != DType::Bool) {
        auto report = diagnostics_.report(
            DiagId::InvalidOperandType, condition->range,
            llvm::formatv("the condition of 'where' must be bool, not {0}", describe(*condition))
                .str());
        noteDeclaration(report, *condition);
        return std::nullopt;
      }
      std::vector<Typed *> branches = {&args[1], &args[2]};
      if (!unify(branches, call.range, "'where'"))
        return std::nullopt;
      Typed result;
      result.value =
          add(Op::Where, args[1].value->dtype, {condition->value, args[1].value, args[2].value},
              call.range, unionDims({condition->value, args[1].value, args[2].value}));
      result.range = call.range;
      return result;
    }
    if (name == "pow") {
      if (!checkArgs(call, 2))
        return std::nullopt;
      return pointwise(Op::Pow, args, call.range, "'pow'", Operands::Float);
    }
    if (!checkArgs(call, 1))
      return std::nullopt;
    if (args[0].isLiteral() && !args[0].literalIsBool)
      args[0].literalIsFloat = true; // exp(1) means exp(1.0)
    return pointwise(unaryMath.at(name), args, call.range, "'" + name + "'",
                     name == "abs" ? Operands::Numeric : Operands::Float);
  }

  std::optional<Typed> reduce(Op op, Typed operand, const CallExpr &call) {
    std::optional<Typed> typed = materializeDefault(operand);
    if (!typed)
      return std::nullopt;
    const ir::Value *input = typed->value;
    std::vector<DimId> reduced;
    for (const Name &dimName : call.overDims) {
      std::optional<DimId> dim = fusion_->findDim(dimName.text);
      if (!dim) {
        reportUnknownDim(dimName);
        return std::nullopt;
      }
      if (std::count(reduced.begin(), reduced.end(), *dim)) {
        diagnostics_.report(DiagId::DuplicateDim, dimName.range, dimName.text, "'over' list");
        return std::nullopt;
      }
      if (!std::count(input->dims.begin(), input->dims.end(), *dim)) {
        auto report = diagnostics_.report(DiagId::ReduceMissingDim, dimName.range, dimName.text,
                                          describe(*typed));
        noteDeclaration(report, *typed);
        return std::nullopt;
      }
      reduced.push_back(*dim);
    }
    if (ir::isArgReduction(op) && reduced.size() != 1) {
      // An index is along one dimension; over several it would need a flattening order.
      diagnostics_.report(DiagId::ArgReductionDims, call.overRange, call.callee.text,
                          reduced.size());
      return std::nullopt;
    }
    if (input->dtype == DType::Bool) {
      diagnostics_.report(
          DiagId::InvalidOperandType, call.range,
          llvm::formatv("'{0}' needs numeric operands, not bool", call.callee.text).str());
      return std::nullopt;
    }
    reduced = sorted(reduced);
    std::vector<DimId> kept;
    for (DimId dim : input->dims)
      if (!std::count(reduced.begin(), reduced.end(), dim))
        kept.push_back(dim);
    Typed result;
    result.range = call.range;
    if (op == Op::ReduceSum && (result.value = recogniseMatMul(input, reduced, kept, call.range)))
      return result;
    // argmax and argmin give an index: i64, like torch.argmax, so any extent fits.
    DType type = ir::isArgReduction(op) ? DType::I64 : input->dtype;
    result.value = add(op, type, {input}, call.range, kept, reduced);
    return result;
  }

  // --- Indexing: x[D = i] and x[D -> W from k] --------------------------------------

  /// A dimension's name that names no value is the dimension's extent, an i64 scalar
  /// (`x[V = V - 1]`, `x[H2 -> H from H]`, `index(D) < D / 2`).
  std::optional<Typed> dimExtentInIndex(const NameExpr &name) {
    std::optional<DimId> dim = fusion_->findDim(name.name.text);
    if (!dim)
      return std::nullopt;
    Typed typed;
    typed.range = name.range;
    typed.value = add(Op::DimSize, DType::I64, {}, name.range, {}, {}, 0, "", {*dim});
    return typed;
  }

  /// The value of an integer scalar expression when the sizes make it a constant:
  /// literals, static extents and arithmetic on them (division truncates, as in kernels).
  std::optional<int64_t> staticInteger(const ir::Value *value) const {
    switch (value->op) {
    case Op::Constant:
      return static_cast<int64_t>(value->constant);
    case Op::DimSize:
      return fusion_->dims[value->indexed[0]].staticExtent;
    case Op::Cast:
      return staticInteger(value->operands[0]);
    case Op::Neg: {
      std::optional<int64_t> a = staticInteger(value->operands[0]);
      return a ? std::optional<int64_t>(-*a) : std::nullopt;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div: {
      std::optional<int64_t> a = staticInteger(value->operands[0]);
      std::optional<int64_t> b = staticInteger(value->operands[1]);
      if (!a || !b || (value->op == Op::Div && *b == 0))
        return std::nullopt;
      return value->op == Op::Add   ? *a + *b
             : value->op == Op::Sub ? *a - *b
             : value->op == Op::Mul ? *a * *b
                                    : *a / *b;
    }
    default:
      return std::nullopt;
    }
  }

  /// `index(D)`: each element's index along D, i64 with dimension D.
  std::optional<Typed> buildDimIndex(const CallExpr &call) {
    const auto *dimName = call.args.size() == 1 && call.overDims.empty()
                              ? llvm::dyn_cast<NameExpr>(call.args[0].get())
                              : nullptr;
    if (!dimName) {
      diagnostics_.report(DiagId::IndexOfDim, call.range);
      return std::nullopt;
    }
    std::optional<DimId> dim = fusion_->findDim(dimName->name.text);
    if (!dim) {
      reportUnknownDim(dimName->name);
      return std::nullopt;
    }
    Typed result;
    result.range = call.range;
    result.value = add(Op::DimIndex, DType::I64, {}, call.range, {*dim}, {}, 0, "", {*dim});
    return result;
  }

  /// Whether a window's offset is of the forms the launcher evaluates to check the
  /// window: integer literals, sizes, integer scalar parameters, + - * / max min.
  bool checkableOffset(const ir::Value *value) const {
    switch (value->op) {
    case Op::Constant:
    case Op::DimSize:
    case Op::Scalar:
      return true;
    case Op::Cast:
      return ir::isInteger(value->operands[0]->dtype) && checkableOffset(value->operands[0]);
    case Op::Neg:
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Max:
    case Op::Min:
      return llvm::all_of(value->operands,
                          [&](const ir::Value *operand) { return checkableOffset(operand); });
    default:
      return false;
    }
  }

  std::optional<Typed> buildIndex(const IndexExpr &indexed) {
    std::optional<Typed> base = buildName(NameExpr(indexed.base));
    if (!base)
      return std::nullopt;
    if (base->isLiteral() || base->value->op != Op::Input) {
      auto report =
          diagnostics_.report(DiagId::IndexNotParameter, indexed.base.range, indexed.base.text);
      noteDeclaration(report, *base);
      return std::nullopt;
    }
    const ir::Value *input = base->value;
    std::optional<DimId> along = fusion_->findDim(indexed.dim.text);
    if (!along) {
      reportUnknownDim(indexed.dim);
      return std::nullopt;
    }
    if (!std::count(input->dims.begin(), input->dims.end(), *along)) {
      auto report = diagnostics_.report(DiagId::IndexMissingDim, indexed.dim.range,
                                        indexed.base.text, indexed.dim.text, describe(*base));
      noteDeclaration(report, *base);
      return std::nullopt;
    }
    std::optional<DimId> window;
    if (indexed.isWindow) {
      window = fusion_->findDim(indexed.window.text);
      if (!window) {
        reportUnknownDim(indexed.window);
        return std::nullopt;
      }
      if (std::count(input->dims.begin(), input->dims.end(), *window)) {
        diagnostics_.report(DiagId::WindowDimInUse, indexed.window.range, indexed.base.text,
                            indexed.dim.text, indexed.window.text,
                            *window == *along
                                ? "a window is a new dimension; name it after its size"
                                : "'" + indexed.base.text + "' already has that dimension");
        return std::nullopt;
      }
    }
    // The index (or offset): an integer; dimension names in it are their extents.
    std::optional<Typed> index;
    if (indexed.index) {
      index = build(*indexed.index);
      if (!index)
        return std::nullopt;
    } else {
      index.emplace();
      index->spelling = "0";
      index->range = indexed.range;
    }
    std::string what = indexed.isWindow ? "the offset of a window" : "an index";
    if (index->isLiteral()) {
      if (index->literalIsFloat || index->literalIsBool) {
        diagnostics_.report(DiagId::IndexNotInteger, index->range, what,
                            "the literal " + index->spelling);
        return std::nullopt;
      }
      index = materialize(*index, DType::I64);
      if (!index)
        return std::nullopt;
    }
    const ir::Value *position = index->value;
    if (!ir::isInteger(position->dtype)) {
      auto report =
          diagnostics_.report(DiagId::IndexNotInteger, index->range, what, describe(*index));
      noteDeclaration(report, *index);
      return std::nullopt;
    }
    if (indexed.isWindow && !position->dims.empty()) {
      auto report = diagnostics_.report(DiagId::IndexNotInteger, index->range, what,
                                        describe(*index) + " (an offset is one number)");
      noteDeclaration(report, *index);
      return std::nullopt;
    }
    if (indexed.isWindow && !checkableOffset(position)) {
      diagnostics_.report(DiagId::WindowOffsetForm, index->range);
      return std::nullopt;
    }
    if (position->dtype != DType::I64)
      position = add(Op::Cast, DType::I64, {position}, index->range, position->dims);
    // Out of range with static sizes: refused here (at runtime the launcher checks).
    std::optional<int64_t> extent = fusion_->dims[*along].staticExtent;
    std::optional<int64_t> at = staticInteger(position);
    const std::string &dimName = indexed.dim.text;
    if (indexed.isWindow) {
      std::optional<int64_t> size = fusion_->dims[*window].staticExtent;
      bool outside = (at && *at < 0) || (at && size && extent && *at + *size > *extent) ||
                     (size && extent && *size > *extent);
      if (outside) {
        std::string from = at ? std::to_string(*at) : ir::sourceText(index->range);
        std::string sized = size ? std::to_string(*size) : std::string("?");
        diagnostics_.report(
            DiagId::IndexOutOfRange, indexed.range,
            llvm::formatv("the window {0}[{1} -> {2} from {3}] ({4} elements from {3}) does not "
                          "fit in {1} = {5}",
                          indexed.base.text, dimName, indexed.window.text, from, sized,
                          extent ? std::to_string(*extent) : std::string("?"))
                .str());
        return std::nullopt;
      }
    } else if (at && (*at < 0 || (extent && *at >= *extent))) {
      diagnostics_.report(
          DiagId::IndexOutOfRange, index->range,
          llvm::formatv("index {0} is outside {1} (0 ..< {2})", *at, dimName,
                        extent ? std::to_string(*extent) : std::string("its extent"))
              .str());
      return std::nullopt;
    }
    std::vector<DimId> dims;
    for (DimId dim : input->dims)
      dims.push_back(dim == *along ? (window ? *window : dim) : dim);
    if (!window) // an index along D itself puts D back: a permutation of D
      dims.erase(std::find(dims.begin(), dims.end(), *along));
    dims.insert(dims.end(), position->dims.begin(), position->dims.end());
    std::vector<DimId> indexedDims = {*along};
    if (window)
      indexedDims.push_back(*window);
    Typed result;
    result.range = indexed.range;
    result.value = add(window ? Op::Window : Op::Gather, input->dtype, {input, position},
                       indexed.range, sorted(dims), {}, 0, "", indexedDims);
    return result;
  }

  /// The input a value reads, looking through casts.
  const ir::Value *sourceInput(const ir::Value *value) const {
    while (value->op == Op::Cast)
      value = value->operands[0];
    return value->op == Op::Input ? value : nullptr;
  }

  ir::MatMulOperand layoutOf(const ir::Value *operand, DimId row, DimId contracted) const {
    ir::MatMulOperand layout{row, true, ""};
    if (const ir::Value *input = sourceInput(operand)) {
      const ir::Param &param = fusion_->params[input->paramIndex];
      layout.inputName = param.name;
      layout.contractedIsInner = !param.dims.empty() && param.dims.back() == contracted;
    }
    return layout;
  }

  /// sum(a * b, over K) where a = [M, K] and b = [N, K]: a matrix product.
  ir::Value *recogniseMatMul(const ir::Value *input, const std::vector<DimId> &reduced,
                             const std::vector<DimId> &kept, llvm::SMRange range) {
    if (input->op != Op::Mul || reduced.size() != 1 || kept.size() != 2)
      return nullptr;
    DimId k = reduced[0];
    const ir::Value *a = input->operands[0], *b = input->operands[1];
    auto other = [&](const ir::Value *v) -> std::optional<DimId> {
      if (v->dims.size() != 2 || !std::count(v->dims.begin(), v->dims.end(), k))
        return std::nullopt;
      return v->dims[0] == k ? v->dims[1] : v->dims[0];
    };
    std::optional<DimId> rowA = other(a), rowB = other(b);
    if (!rowA || !rowB || *rowA == *rowB)
      return nullptr;
    if (*rowA > *rowB) {
      std::swap(a, b);
      std::swap(rowA, rowB);
    }
    ir::Value *product = add(Op::MatMul, input->dtype, {a, b}, range, kept, {k});
    // The layouts follow from the operands: a shared product already has these.
    product->lhsLayout = layoutOf(a, *rowA, k);
    product->rhsLayout = layoutOf(b, *rowB, k);
    return product;
  }

  /// A call's identity for the inlining cache: the fn and what each argument is (a
  /// value, or a literal by its value, kind and spelling).
  struct CallKey {
    const FnDecl *fn;
    std::vector<std::tuple<unsigned, uint64_t, int, std::string>> args;
    bool operator<(const CallKey &other) const {
      return std::tie(fn, args) < std::tie(other.fn, other.args);
    }
  };

  static std::tuple<unsigned, uint64_t, int, std::string> argKey(const Typed &arg) {
    if (!arg.isLiteral())
      return {arg.value->id, 0, 0, ""};
    uint64_t bits;
    std::memcpy(&bits, &arg.literal, sizeof bits);
    return {~0u, bits, 1 + arg.literalIsFloat + 2 * arg.literalIsBool, arg.spelling};
  }

  std::optional<Typed> inlineFn(const CallExpr &call, const FnEntry &entry) {
    const FnDecl &fn = *entry.decl;
    for (const FnFrame &frame : fnFrames_)
      if (frame.fn == &fn) {
        diagnostics_.report(DiagId::FnRecursion, call.range, fn.name.text)
            .note(DiagId::NoteDeclaredHere, fn.name.range, fn.name.text, "");
        return std::nullopt;
      }
    // Calls that build distinct values at every level (f(x * 2) + f(x * 3)) still grow
    // the IR exponentially; stop before that exhausts the machine.
    if (fusion_->values.size() > kMaxFusionValues) {
      if (!limitReported_) {
        limitReported_ = true;
        diagnostics_.report(DiagId::FusionTooLarge, call.range, fusion_->name, kMaxFusionValues,
                            "when '" + fn.name.text + "' is inlined here");
      }
      return std::nullopt;
    }
    // Each level of inlining is a few frames of this recursive builder.
    if (fnFrames_.size() >= kMaxInlineDepth) {
      if (!limitReported_) {
        limitReported_ = true;
        std::vector<std::string> chain;
        for (size_t i = 0; i < 3 && i < fnFrames_.size(); ++i)
          chain.push_back("'" + fnFrames_[i].fn->name.text + "'");
        chain.push_back("...");
        chain.push_back("'" + fnFrames_.back().fn->name.text + "'");
        diagnostics_.report(DiagId::FnInlineTooDeep, call.range, kMaxInlineDepth, fn.name.text,
                            llvm::join(chain, " -> "));
      }
      return std::nullopt;
    }
    if (!call.overDims.empty()) {
      diagnostics_.report(DiagId::UnexpectedOver, call.overRange, fn.name.text);
      return std::nullopt;
    }
    if (call.args.size() != fn.params.size()) {
      diagnostics_
          .report(DiagId::WrongArgumentCount, call.range, fn.name.text, fn.params.size(),
                  call.args.size())
          .note(DiagId::NoteDeclaredHere, fn.name.range, fn.name.text, "");
      return std::nullopt;
    }
    FnFrame frame{&fn, {}, entry.scope};
    CallKey key{&fn, {}};
    for (size_t i = 0; i < fn.params.size(); ++i) {
      std::optional<Typed> arg = build(*call.args[i]);
      if (!arg)
        return std::nullopt;
      if (!frame.args.emplace(fn.params[i].text, *arg).second) {
        diagnostics_.report(DiagId::Redefinition, fn.params[i].range, fn.params[i].text);
        return std::nullopt;
      }
      key.args.push_back(argKey(*arg));
    }
    // A body depends only on its arguments: a call seen before is not built again (nor
    // its errors reported again), so nested calls cost their distinct calls, not the
    // size of the expanded tree.
    std::optional<Typed> result;
    if (auto cached = inlined_.find(key); cached != inlined_.end()) {
      result = cached->second;
    } else {
      fnFrames_.push_back(std::move(frame));
      result = build(*fn.body);
      fnFrames_.pop_back();
      inlined_.emplace(std::move(key), result);
    }
    if (result)
      result->range = call.range;
    return result;
  }

  const FusionDecl &decl_;
  const Scope &scope_;
  DiagnosticEngine &diagnostics_;
  const SemaOptions &options_;
  std::unique_ptr<ir::Fusion> fusion_;
  std::map<std::string, int64_t> staticValues_;
  std::map<std::string, llvm::SMRange> staticAt_;
  std::map<std::string, Binding> env_;
  std::map<std::string, size_t> outputIndex_;
  std::map<std::string, unsigned> inoutParams_;
  std::map<std::string, llvm::SMRange> assignedAt_;
  std::set<std::string> brokenOutputs_; // their declared type had errors
  std::vector<FnFrame> fnFrames_;
  std::map<CallKey, std::optional<Typed>> inlined_; // fn calls already built
  std::map<ValueKey, ir::Value *> values_;          // every value, by what it computes
  bool limitReported_ = false;
};

} // namespace

std::unique_ptr<Program> analyze(std::unique_ptr<ast::File> file, llvm::SourceMgr &sources,
                                 DiagnosticEngine &diagnostics, const SemaOptions &options) {
  auto program = std::make_unique<Program>();
  program->main = std::move(file);
  unsigned errorsBefore = diagnostics.errorCount();
  ModuleLoader loader(sources, diagnostics, options, *program);
  std::vector<std::string> stack;
  llvm::SmallString<256> mainPath;
  if (!llvm::sys::fs::real_path(program->main->path, mainPath))
    stack.push_back(std::string(mainPath));
  const Scope *scope = loader.load(*program->main, stack);

  std::map<std::string, const FusionDecl *> fusions;
  for (const DeclPtr &decl : program->main->decls) {
    const auto *fusion = llvm::dyn_cast<FusionDecl>(decl.get());
    if (!fusion)
      continue;
    for (const StaticDim &dim : fusion->staticDims)
      program->staticDimNames.insert(dim.name.text);
    if (auto [it, inserted] = fusions.emplace(fusion->name.text, fusion); !inserted) {
      diagnostics.report(DiagId::Redefinition, fusion->name.range, fusion->name.text)
          .note(DiagId::NoteDeclaredHere, it->second->name.range, fusion->name.text, "");
      continue;
    }
    if (std::optional<std::string> why = reservedFusionName(fusion->name.text)) {
      diagnostics.report(DiagId::ReservedFusionName, fusion->name.range, fusion->name.text, *why);
      continue;
    }
    if (auto built = FusionBuilder(*fusion, *scope, diagnostics, options).build())
      program->fusions.push_back(std::move(built));
  }
  CheckedGradients gradients = checkGradients(program->main->decls, program->fusions, diagnostics);
  program->backwardOf = std::move(gradients.backwardOf);
  program->sameGradientOf = std::move(gradients.sameGradientOf);
  for (const DeclPtr &decl : program->main->decls)
    if (const auto *schedule = llvm::dyn_cast<ScheduleDecl>(decl.get()))
      if (!fusions.count(schedule->fusion.text)) {
        // Imports bring fns only (docs/language.md): a fusion is compiled, and scheduled,
        // in the file that declares it.
        auto imported = scope->importedFusions.find(schedule->fusion.text);
        if (imported != scope->importedFusions.end())
          diagnostics
              .report(DiagId::ScheduleOfImportedFusion, schedule->fusion.range,
                      schedule->fusion.text, imported->second.second)
              .note(DiagId::NoteDeclaredHere, imported->second.first->name.range,
                    schedule->fusion.text, " (imported)");
        else
          diagnostics.report(DiagId::UnknownFusion, schedule->fusion.range, schedule->fusion.text);
      }
  if (diagnostics.errorCount() != errorsBefore)
    return nullptr;
  return program;
}

} // namespace fsl
