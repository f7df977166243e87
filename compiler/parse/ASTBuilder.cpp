// ASTBuilder.cpp — builds AST nodes from the parse tree, one function per grammar rule.
//
// Comments live on ANTLR's hidden channel. A cursor walks the token stream in source
// order: each node takes the comments between the previous node and itself as leading
// comments (and any comments inside it, so none is ever lost), and a comment on its last
// line as its trailing comment.
#include "parse/ASTBuilder.h"

#include "FSLLexer.h"
#include "parse/TokenLocator.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/StringRef.h>

namespace fsl {
namespace {

using namespace ast;

/// Last line a token occupies (block comments may span several).
size_t lastLine(const antlr4::Token *token) {
  const std::string text = token->getText();
  return token->getLine() + static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

class Builder {
public:
  Builder(antlr4::CommonTokenStream &tokens, const TokenLocator &locator,
          DiagnosticEngine &diagnostics)
      : tokens_(tokens), locator_(locator), diagnostics_(diagnostics) {}

  std::unique_ptr<File> file(FSLParser::FileContext *context) {
    auto result = std::make_unique<File>();
    for (auto *declaration : context->declaration())
      result->decls.push_back(decl(declaration));
    result->endComments = takeCommentsBefore(context->EOF()->getSymbol()->getTokenIndex(), false);
    return result;
  }

private:
  // --- Comments ---------------------------------------------------------------------

  bool isComment(const antlr4::Token *token) const {
    return token->getChannel() == antlr4::Token::HIDDEN_CHANNEL;
  }

  /// Takes the comments before token `endIndex`. An empty string stands for a blank line
  /// between two of them, or between the last one and the token (when `keepBlankBeforeEnd`).
  std::vector<std::string> takeCommentsBefore(size_t endIndex, bool keepBlankBeforeEnd = true) {
    std::vector<std::string> comments;
    size_t previousCommentLine = 0;
    for (; cursor_ < endIndex && cursor_ < tokens_.size(); ++cursor_) {
      antlr4::Token *token = tokens_.get(cursor_);
      if (!isComment(token))
        continue;
      if (previousCommentLine != 0 && token->getLine() > previousCommentLine + 1)
        comments.emplace_back();
      comments.push_back(token->getText());
      previousCommentLine = lastLine(token);
    }
    if (keepBlankBeforeEnd && previousCommentLine != 0 && endIndex < tokens_.size() &&
        tokens_.get(endIndex)->getLine() > previousCommentLine + 1)
      comments.emplace_back();
    return comments;
  }

  /// Attaches the comments around the node spanning tokens [start, stop].
  /// `separator` is a token type allowed between the node and its trailing comment
  /// (the comma after a parameter).
  Comments attach(antlr4::ParserRuleContext *context, size_t separator = 0) {
    Comments comments;
    size_t start = context->getStart()->getTokenIndex();
    size_t stop = context->getStop()->getTokenIndex();
    size_t firstLine = context->getStart()->getLine();
    // The first comment that will be printed before the node decides the blank line.
    size_t firstIndex = start;
    for (size_t i = cursor_; i < start; ++i)
      if (isComment(tokens_.get(i))) {
        firstIndex = i;
        break;
      }
    firstLine = tokens_.get(firstIndex)->getLine();
    comments.blankLineBefore = previousLine_ != 0 && firstLine > previousLine_ + 1;
    comments.leading = takeCommentsBefore(start);
    // Comments inside the node move before it: the printer lays the node out anew.
    cursor_ = start;
    for (std::string &inner : takeCommentsBefore(stop + 1, false))
      comments.leading.push_back(std::move(inner));
    size_t line = lastLine(context->getStop());
    size_t next = stop + 1;
    if (separator != 0 && next < tokens_.size() && tokens_.get(next)->getType() == separator)
      ++next;
    if (next < tokens_.size() && isComment(tokens_.get(next)) &&
        tokens_.get(next)->getLine() == line) {
      cursor_ = next; // skips only the separator: no comment sits between
      comments.trailing = tokens_.get(next)->getText();
      line = lastLine(tokens_.get(next));
      cursor_ = next + 1;
    }
    previousLine_ = line;
    return comments;
  }

  /// Comments after the last item of a body, before its closing brace.
  std::vector<std::string> takeEndComments(antlr4::Token *closingBrace) {
    size_t first = cursor_;
    while (first < closingBrace->getTokenIndex() && !isComment(tokens_.get(first)))
      ++first;
    bool blank = first < closingBrace->getTokenIndex() && previousLine_ != 0 &&
                 tokens_.get(first)->getLine() > previousLine_ + 1;
    std::vector<std::string> comments = takeCommentsBefore(closingBrace->getTokenIndex(), false);
    if (blank)
      comments.insert(comments.begin(), std::string());
    return comments;
  }

  /// Starts a braced body: items inside count blank lines from the opening line.
  void enterBody(antlr4::Token *openingBrace) { previousLine_ = openingBrace->getLine(); }

  // --- Small pieces -----------------------------------------------------------------

  llvm::SMRange range(antlr4::ParserRuleContext *context) { return locator_.range(context); }
  llvm::SMRange range(antlr4::tree::TerminalNode *node) {
    return locator_.range(node->getSymbol());
  }

  Name name(FSLParser::NameContext *context) { return Name{context->getText(), range(context)}; }

  IntLiteral intLiteral(antlr4::tree::TerminalNode *node) { return intLiteral(node->getSymbol()); }
  IntLiteral intLiteral(antlr4::Token *token) {
    IntLiteral literal;
    literal.range = locator_.range(token);
    // Overflow was reported by the lexer pass; the tree is not built in that case.
    (void)llvm::StringRef(token->getText()).getAsInteger(10, literal.value);
    return literal;
  }

  IntTuple intTuple(FSLParser::IntTupleContext *context) {
    IntTuple tuple;
    tuple.range = range(context);
    for (auto *value : context->INT())
      tuple.values.push_back(intLiteral(value));
    return tuple;
  }

  Type type(FSLParser::TypeContext *context) {
    Type result;
    result.element = *parseElementType(context->ELEMENT_TYPE()->getText());
    for (auto *dim : context->name())
      result.dims.push_back(name(dim));
    result.range = range(context);
    return result;
  }

  DimRef dimRef(FSLParser::DimRefContext *context) {
    DimRef result;
    auto names = context->name();
    if (names.size() == 2) {
      result.tensor = name(names[0]);
      result.dim = name(names[1]);
    } else {
      result.dim = name(names[0]);
    }
    result.range = range(context);
    return result;
  }

  // --- Expressions ------------------------------------------------------------------

  ExprPtr expr(FSLParser::ExprContext *context) {
    if (auto *primary = dynamic_cast<FSLParser::PrimaryExprContext *>(context))
      return primaryExpr(primary->primary());
    if (auto *unary = dynamic_cast<FSLParser::UnaryExprContext *>(context)) {
      UnaryOp op = unary->op->getType() == FSLLexer::MINUS ? UnaryOp::Negate : UnaryOp::Not;
      return std::make_unique<UnaryExpr>(op, expr(unary->expr()), range(context));
    }
    auto *binary = static_cast<FSLParser::BinaryExprContext *>(context);
    return std::make_unique<BinaryExpr>(binaryOp(binary->op->getType()), expr(binary->expr(0)),
                                        expr(binary->expr(1)), range(context),
                                        locator_.range(binary->op));
  }

  static BinaryOp binaryOp(size_t tokenType) {
    switch (tokenType) {
    case FSLLexer::STAR:
      return BinaryOp::Mul;
    case FSLLexer::SLASH:
      return BinaryOp::Div;
    case FSLLexer::PLUS:
      return BinaryOp::Add;
    case FSLLexer::MINUS:
      return BinaryOp::Sub;
    case FSLLexer::LT:
      return BinaryOp::Lt;
    case FSLLexer::LE:
      return BinaryOp::Le;
    case FSLLexer::GT:
      return BinaryOp::Gt;
    case FSLLexer::GE:
      return BinaryOp::Ge;
    case FSLLexer::EQ:
      return BinaryOp::Eq;
    case FSLLexer::NE:
      return BinaryOp::Ne;
    case FSLLexer::AND:
      return BinaryOp::And;
    default:
      return BinaryOp::Or;
    }
  }

  ExprPtr literal(FSLParser::LiteralContext *context) {
    std::string text = context->getText();
    llvm::SMRange where = range(context);
    if (context->INT()) {
      auto result = std::make_unique<LiteralExpr>(LiteralExpr::LiteralKind::Int, text, where);
      result->intValue = intLiteral(context->INT()).value;
      return result;
    }
    if (context->FLOAT()) {
      auto result = std::make_unique<LiteralExpr>(LiteralExpr::LiteralKind::Float, text, where);
      result->floatValue = std::strtod(text.c_str(), nullptr);
      return result;
    }
    auto result = std::make_unique<LiteralExpr>(LiteralExpr::LiteralKind::Bool, text, where);
    result->boolValue = context->TRUE() != nullptr;
    return result;
  }

  ExprPtr primaryExpr(FSLParser::PrimaryContext *context) {
    llvm::SMRange where = range(context);
    if (auto *literalContext = dynamic_cast<FSLParser::LiteralPrimaryContext *>(context))
      return literal(literalContext->literal());
    if (auto *cast = dynamic_cast<FSLParser::CastPrimaryContext *>(context))
      return std::make_unique<CastExpr>(*parseElementType(cast->ELEMENT_TYPE()->getText()),
                                        expr(cast->expr()), where);
    if (auto *call = dynamic_cast<FSLParser::CallPrimaryContext *>(context)) {
      auto result = std::make_unique<CallExpr>(name(call->name()), where);
      if (auto *arguments = call->arguments()) {
        for (auto *argument : arguments->expr())
          result->args.push_back(expr(argument));
        if (auto *over = arguments->overClause()) {
          for (auto *dim : over->name())
            result->overDims.push_back(name(dim));
          result->overRange = range(over);
        }
      }
      return result;
    }
    if (auto *nameContext = dynamic_cast<FSLParser::NamePrimaryContext *>(context))
      return std::make_unique<NameExpr>(name(nameContext->name()));
    if (auto *indexed = dynamic_cast<FSLParser::IndexPrimaryContext *>(context)) {
      auto result = std::make_unique<IndexExpr>(name(indexed->name()), where);
      if (auto *select = dynamic_cast<FSLParser::SelectIndexContext *>(indexed->indexClause())) {
        result->dim = name(select->dim);
        result->index = expr(select->expr());
      } else {
        auto *window = static_cast<FSLParser::WindowIndexContext *>(indexed->indexClause());
        result->isWindow = true;
        result->dim = name(window->dim);
        result->window = name(window->window);
        if (window->expr())
          result->index = expr(window->expr());
      }
      return result;
    }
    auto *paren = static_cast<FSLParser::ParenPrimaryContext *>(context);
    return std::make_unique<ParenExpr>(expr(paren->expr()), where);
  }

  // --- Declarations -----------------------------------------------------------------

  DeclPtr decl(FSLParser::DeclarationContext *context) {
    Comments comments = attachDeclLeading(context);
    DeclPtr result;
    if (auto *import = context->importDecl())
      result = importDecl(import);
    else if (auto *fn = context->fnDecl())
      result = fnDecl(fn);
    else if (auto *fusion = context->fusionDecl())
      result = fusionDecl(fusion);
    else
      result = scheduleDecl(context->scheduleDecl());
    result->comments.leading = std::move(comments.leading);
    result->comments.blankLineBefore = comments.blankLineBefore;
    auto *schedule = llvm::dyn_cast<ScheduleDecl>(result.get());
    auto *autoBody = schedule ? dynamic_cast<FSLParser::AutoScheduleContext *>(
                                    context->scheduleDecl()->scheduleBody())
                              : nullptr;
    bool oneLine = llvm::isa<ImportDecl>(result.get()) || llvm::isa<FnDecl>(result.get()) ||
                   (autoBody && !autoBody->knobBlock());
    if (oneLine)
      attachOneLineComments(context, result->comments);
    previousLine_ = lastLine(tokens_.get(cursor_ == 0 ? 0 : cursor_ - 1));
    return result;
  }

  /// Leading comments of a declaration; its body is handled item by item.
  Comments attachDeclLeading(antlr4::ParserRuleContext *context) {
    Comments comments;
    size_t start = context->getStart()->getTokenIndex();
    size_t firstIndex = start;
    for (size_t i = cursor_; i < start; ++i)
      if (isComment(tokens_.get(i))) {
        firstIndex = i;
        break;
      }
    comments.blankLineBefore =
        previousLine_ != 0 && tokens_.get(firstIndex)->getLine() > previousLine_ + 1;
    comments.leading = takeCommentsBefore(start);
    return comments;
  }

  /// For one-line declarations, comments inside move before the declaration (the printer
  /// lays it out anew) and the comment right after its `;`, on its line, is trailing.
  void attachOneLineComments(antlr4::ParserRuleContext *context, Comments &comments) {
    size_t stop = context->getStop()->getTokenIndex();
    size_t line = lastLine(context->getStop());
    for (std::string &inner : takeCommentsBefore(stop + 1, false))
      comments.leading.push_back(std::move(inner));
    size_t next = stop + 1;
    if (next < tokens_.size() && isComment(tokens_.get(next)) &&
        tokens_.get(next)->getLine() == line) {
      cursor_ = next + 1;
      comments.trailing = tokens_.get(next)->getText();
    }
  }

  DeclPtr importDecl(FSLParser::ImportDeclContext *context) {
    auto result = std::make_unique<ImportDecl>(range(context));
    result->spelling = context->STRING()->getText();
    result->pathRange = range(context->STRING());
    llvm::StringRef quoted(result->spelling);
    quoted = quoted.drop_front().drop_back();
    for (size_t i = 0; i < quoted.size(); ++i) {
      if (quoted[i] == '\\' && i + 1 < quoted.size())
        ++i;
      result->path.push_back(quoted[i]);
    }
    return result;
  }

  DeclPtr fnDecl(FSLParser::FnDeclContext *context) {
    auto result = std::make_unique<FnDecl>(range(context));
    auto names = context->name();
    result->name = name(names[0]);
    for (size_t i = 1; i < names.size(); ++i)
      result->params.push_back(name(names[i]));
    result->body = expr(context->expr());
    return result;
  }

  DeclPtr fusionDecl(FSLParser::FusionDeclContext *context) {
    auto result = std::make_unique<FusionDecl>(range(context));
    result->name = name(context->name());
    if (auto *dims = context->staticDims()) {
      for (auto *dim : dims->staticDim()) {
        StaticDim staticDim{name(dim->name()), std::nullopt, range(dim)};
        if (dim->INT())
          staticDim.value = intLiteral(dim->INT());
        result->staticDims.push_back(std::move(staticDim));
      }
    }
    // Items inside the signature count blank lines from the `fusion` line.
    previousLine_ = context->getStart()->getLine();
    for (auto *paramContext : context->param()) {
      Param param;
      param.comments = attach(paramContext, FSLLexer::COMMA);
      param.name = name(paramContext->name());
      param.isInout = paramContext->INOUT() != nullptr;
      param.isStrided = paramContext->STRIDED() != nullptr;
      param.type = type(paramContext->type());
      if (paramContext->expr())
        param.defaultValue = expr(paramContext->expr());
      param.range = range(paramContext);
      result->params.push_back(std::move(param));
    }
    for (auto *outputContext : context->output()) {
      Output output;
      output.comments = attach(outputContext, FSLLexer::COMMA);
      output.name = name(outputContext->name());
      output.type = type(outputContext->type());
      output.range = range(outputContext);
      result->outputs.push_back(std::move(output));
    }
    for (auto *item : context->backward) {
      if (!item->source) {
        result->backward.push_back(name(item->target));
        continue;
      }
      ast::FusionDecl::SameGradient same;
      same.target = name(item->target);
      same.source = name(item->source);
      same.range = range(item);
      result->sameGradients.push_back(std::move(same));
    }
    auto *body = context->fusionBody();
    enterBody(body->LBRACE()->getSymbol());
    for (auto *statementContext : body->statement())
      result->body.push_back(statement(statementContext));
    result->endComments = takeEndComments(body->RBRACE()->getSymbol());
    takeCommentAfterClosingBrace(result.get(), body->RBRACE()->getSymbol());
    return result;
  }

  /// `} // end of fusion` stays a trailing comment of the declaration.
  void takeCommentAfterClosingBrace(Decl *decl, antlr4::Token *brace) {
    cursor_ = brace->getTokenIndex() + 1;
    if (cursor_ < tokens_.size() && isComment(tokens_.get(cursor_)) &&
        tokens_.get(cursor_)->getLine() == brace->getLine()) {
      decl->comments.trailing = tokens_.get(cursor_)->getText();
      ++cursor_;
    }
  }

  Statement statement(FSLParser::StatementContext *context) {
    Statement result;
    result.comments = attach(context);
    result.range = range(context);
    if (auto *let = dynamic_cast<FSLParser::LetStatementContext *>(context)) {
      result.isLet = true;
      result.target = name(let->name());
      if (let->type())
        result.declaredType = type(let->type());
      result.value = expr(let->expr());
    } else {
      auto *assign = static_cast<FSLParser::AssignStatementContext *>(context);
      result.target = name(assign->name());
      result.value = expr(assign->expr());
    }
    return result;
  }

  DeclPtr scheduleDecl(FSLParser::ScheduleDeclContext *context) {
    auto result = std::make_unique<ScheduleDecl>(range(context));
    result->fusion = name(context->name());
    if (auto *when = context->whenClause()) {
      for (auto *condition : when->sizeCondition()) {
        SizeCondition built{name(condition->name()), std::nullopt,
                            binaryOp(condition->op->getType()), intLiteral(condition->bound),
                            range(condition)};
        if (condition->modulus)
          built.modulus = intLiteral(condition->modulus);
        result->when.push_back(std::move(built));
      }
    }
    auto *body = context->scheduleBody();
    if (auto *explicitBody = dynamic_cast<FSLParser::ExplicitScheduleContext *>(body)) {
      enterBody(explicitBody->LBRACE()->getSymbol());
      for (auto *directiveContext : explicitBody->directive()) {
        Comments comments = attach(directiveContext);
        DirectivePtr built = directive(directiveContext);
        built->comments = std::move(comments);
        result->directives.push_back(std::move(built));
      }
      result->endComments = takeEndComments(explicitBody->RBRACE()->getSymbol());
      takeCommentAfterClosingBrace(result.get(), explicitBody->RBRACE()->getSymbol());
      if (result->directives.empty())
        diagnostics_.report(DiagId::EmptySchedule, result->fusion.range, result->fusion.text);
      return result;
    }
    auto *autoBody = static_cast<FSLParser::AutoScheduleContext *>(body);
    result->isAuto = true;
    if (autoBody->name())
      result->autoKind = name(autoBody->name());
    if (auto *knobs = autoBody->knobBlock()) {
      enterBody(knobs->LBRACE()->getSymbol());
      for (auto *knobContext : knobs->knob()) {
        Knob knob;
        knob.comments = attach(knobContext);
        knob.name = name(knobContext->name());
        knob.value = literal(knobContext->literal());
        knob.range = range(knobContext);
        result->knobs.push_back(std::move(knob));
      }
      result->endComments = takeEndComments(knobs->RBRACE()->getSymbol());
      takeCommentAfterClosingBrace(result.get(), knobs->RBRACE()->getSymbol());
    }
    return result;
  }

  // --- Directives -------------------------------------------------------------------

  template <typename T> std::unique_ptr<T> make(antlr4::ParserRuleContext *context) {
    return std::make_unique<T>(range(context));
  }

  static MemoryKind memoryKind(antlr4::Token *token) {
    switch (token->getType()) {
    case FSLLexer::K_SHARED:
      return MemoryKind::Shared;
    case FSLLexer::K_RECOMPUTE:
      return MemoryKind::Recompute;
    default:
      return MemoryKind::Registers;
    }
  }

  DirectivePtr directive(FSLParser::DirectiveContext *context) {
    if (auto *c = dynamic_cast<FSLParser::SplitDirectiveContext *>(context)) {
      auto d = make<SplitDirective>(c);
      d->dim = dimRef(c->dimRef());
      d->factorIsOuter = c->K_INTO() != nullptr;
      d->factor = intLiteral(c->INT());
      d->outer = name(c->name(0));
      d->inner = name(c->name(1));
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::MergeDirectiveContext *>(context)) {
      auto d = make<MergeDirective>(c);
      d->first = dimRef(c->dimRef(0));
      d->second = dimRef(c->dimRef(1));
      d->result = name(c->name());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::ReorderDirectiveContext *>(context)) {
      auto d = make<ReorderDirective>(c);
      for (auto *dim : c->dimRef())
        d->order.push_back(dimRef(dim));
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::ParallelizeDirectiveContext *>(context)) {
      auto d = make<ParallelizeDirective>(c);
      for (auto *binding : c->binding())
        d->bindings.push_back({dimRef(binding->dimRef()),
                               *parseParallelType(binding->PARALLEL_TYPE()->getText()),
                               range(binding->PARALLEL_TYPE())});
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::VectorizeDirectiveContext *>(context)) {
      auto d = make<VectorizeDirective>(c);
      d->dim = dimRef(c->dimRef());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::UnrollDirectiveContext *>(context)) {
      auto d = make<UnrollDirective>(c);
      d->dim = dimRef(c->dimRef());
      if (c->INT())
        d->factor = intLiteral(c->INT());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::UnswitchDirectiveContext *>(context)) {
      auto d = make<UnswitchDirective>(c);
      d->dim = dimRef(c->dimRef());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::PrefetchDirectiveContext *>(context)) {
      auto d = make<PrefetchDirective>(c);
      d->dim = dimRef(c->dimRef());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::RfactorDirectiveContext *>(context)) {
      auto d = make<RfactorDirective>(c);
      d->dim = dimRef(c->dimRef());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::InlineDirectiveContext *>(context)) {
      auto d = make<InlineDirective>(c);
      if (c->name())
        d->tensor = name(c->name());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::ComputeAtDirectiveContext *>(context)) {
      auto d = make<ComputeAtDirective>(c);
      d->tensor = name(c->name());
      d->at = dimRef(c->dimRef());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::ComputeWithDirectiveContext *>(context)) {
      auto d = make<ComputeWithDirective>(c);
      d->tensor = name(c->name());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::PersistentDirectiveContext *>(context)) {
      auto d = make<PersistentDirective>(c);
      d->tensor = name(c->name());
      d->memory = memoryKind(c->memory);
      d->memoryRange = locator_.range(c->memory);
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::CacheDirectiveContext *>(context)) {
      auto d = make<CacheDirective>(c);
      d->tensor = name(c->name());
      d->memory = memoryKind(c->memory);
      d->memoryRange = locator_.range(c->memory);
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::LaunchBoundsDirectiveContext *>(context)) {
      auto d = make<LaunchBoundsDirective>(c);
      d->value = intLiteral(c->INT());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::MaxrregcountDirectiveContext *>(context)) {
      auto d = make<MaxRRegCountDirective>(c);
      d->value = intLiteral(c->INT());
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::PdlDirectiveContext *>(context))
      return make<PdlDirective>(c);
    if (auto *c = dynamic_cast<FSLParser::GridSyncDirectiveContext *>(context))
      return make<GridSyncDirective>(c);
    if (auto *c = dynamic_cast<FSLParser::FastExpDirectiveContext *>(context))
      return make<FastExpDirective>(c);
    if (auto *c = dynamic_cast<FSLParser::FastTanhDirectiveContext *>(context))
      return make<FastTanhDirective>(c);
    if (auto *c = dynamic_cast<FSLParser::FastDivDirectiveContext *>(context))
      return make<FastDivDirective>(c);
    if (auto *c = dynamic_cast<FSLParser::ReduceDirectiveContext *>(context)) {
      auto d = make<ReduceDirective>(c);
      d->onePass = c->K_ONE_PASS() != nullptr;
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::MmaDirectiveContext *>(context)) {
      auto d = make<MmaDirective>(c);
      d->reductionDim = name(c->name(0));
      d->ctaTile = intTuple(c->intTuple(0));
      d->warpTile = intTuple(c->intTuple(1));
      d->instruction = name(c->name(1));
      d->instructionShape = intTuple(c->intTuple(2));
      if (antlr4::tree::TerminalNode *swap = c->K_SWAP_AB()) {
        d->swapAB = true;
        d->swapABRange = range(swap);
      }
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::PipelineDirectiveContext *>(context)) {
      auto d = make<PipelineDirective>(c);
      d->stages = intLiteral(c->INT());
      d->viaTma = c->K_TMA() != nullptr;
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::WarpSpecializeDirectiveContext *>(context)) {
      auto d = make<WarpSpecializeDirective>(c);
      d->producerRegs = intLiteral(c->INT(0));
      d->consumerCount = intLiteral(c->INT(1));
      d->consumerRegs = intLiteral(c->INT(2));
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::TilesDirectiveContext *>(context)) {
      auto d = make<TilesDirective>(c);
      auto *order = c->tileOrder();
      if (dynamic_cast<FSLParser::OnePerCtaOrderContext *>(order)) {
        d->order = TileOrderKind::OnePerCta;
      } else if (auto *persistent = dynamic_cast<FSLParser::PersistentOrderContext *>(order)) {
        d->order = TileOrderKind::Persistent;
        if (persistent->INT())
          d->parameter = intLiteral(persistent->INT());
        d->hilbert = persistent->K_HILBERT() != nullptr;
      } else if (auto *streamK = dynamic_cast<FSLParser::StreamKOrderContext *>(order)) {
        d->order = TileOrderKind::StreamK;
        if (streamK->INT())
          d->parameter = intLiteral(streamK->INT());
        d->hilbert = streamK->K_HILBERT() != nullptr;
      } else {
        d->order = TileOrderKind::SplitK;
        d->parameter = intLiteral(static_cast<FSLParser::SplitKOrderContext *>(order)->INT());
      }
      return d;
    }
    if (auto *c = dynamic_cast<FSLParser::ClusterDirectiveContext *>(context)) {
      auto d = make<ClusterDirective>(c);
      d->shape = intTuple(c->intTuple());
      d->multicast = c->K_MULTICAST() != nullptr;
      return d;
    }
    auto *c = static_cast<FSLParser::EpilogueDirectiveContext *>(context);
    auto d = make<EpilogueDirective>(c);
    d->via = c->K_REGISTERS()   ? EpilogueKind::Registers
             : c->K_TMA_STORE() ? EpilogueKind::SharedTmaStore
                                : EpilogueKind::Shared;
    if (c->intTuple())
      d->tile = intTuple(c->intTuple());
    return d;
  }

  antlr4::CommonTokenStream &tokens_;
  const TokenLocator &locator_;
  DiagnosticEngine &diagnostics_;
  size_t cursor_ = 0;       // next token whose comments are not yet attached
  size_t previousLine_ = 0; // last line of the previous item, for blank lines
};

} // namespace

std::unique_ptr<ast::File> buildAST(FSLParser::FileContext *tree, antlr4::CommonTokenStream &tokens,
                                    const TokenLocator &locator, DiagnosticEngine &diagnostics) {
  return Builder(tokens, locator, diagnostics).file(tree);
}

} // namespace fsl
