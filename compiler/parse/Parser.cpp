// Parser.cpp — bytes → tokens → parse tree → AST, with every error reported once.
#include "parse/Parser.h"

#include "FSLLexer.h"
#include "FSLParser.h"
#include "parse/ASTBuilder.h"
#include "parse/TokenLocator.h"
#include "support/Diagnostics.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/SourceMgr.h>

#include <set>

namespace fsl {
namespace {

/// Thrown from the error listener once the error limit is reached, to stop the parser.
struct StopParsing {};

/// Returns the offset of the first byte that is not part of valid UTF-8, or npos.
size_t findInvalidUtf8(llvm::StringRef text) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.data());
  const auto *end = begin + text.size();
  const llvm::UTF8 *cursor = begin;
  while (cursor < end) {
    unsigned length = llvm::getUTF8SequenceSize(cursor, end);
    if (length == 0)
      return static_cast<size_t>(cursor - begin);
    cursor += length;
  }
  return llvm::StringRef::npos;
}

/// How a stray character is shown: 'x' for printable ASCII, U+XXXX otherwise.
std::string describeCharacter(const std::string &utf8) {
  if (utf8.size() == 1 && llvm::isPrint(utf8[0]))
    return "'" + utf8 + "'";
  llvm::UTF32 codePoint = 0;
  const auto *source = reinterpret_cast<const llvm::UTF8 *>(utf8.data());
  llvm::UTF32 *target = &codePoint;
  if (llvm::ConvertUTF8toUTF32(&source, source + utf8.size(), &target, target + 1,
                               llvm::lenientConversion) != llvm::conversionOK)
    return "U+FFFD";
  std::string shown = llvm::formatv("U+{0:X-4}", static_cast<unsigned>(codePoint)).str();
  if (codePoint >= 0xA0)
    shown = "'" + utf8 + "' (" + shown + ")";
  return shown;
}

/// A human name for what a token type stands for, used in "expected ..." lists.
std::string describeExpected(const antlr4::dfa::Vocabulary &vocabulary, size_t type) {
  switch (type) {
  case antlr4::Token::EOF:
    return "end of file";
  case FSLLexer::IDENT:
    return "a name";
  case FSLLexer::INT:
    return "an integer";
  case FSLLexer::FLOAT:
    return "a number";
  case FSLLexer::STRING:
    return "a string";
  case FSLLexer::ELEMENT_TYPE:
    return "an element type (bool, i32, i64, f16, bf16, f32, f64)";
  case FSLLexer::PARALLEL_TYPE:
    return "a parallel type (BIDx, BIDy, BIDz, TIDx, TIDy, TIDz)";
  default:
    return vocabulary.getLiteralName(type);
  }
}

bool isDirectiveWord(size_t type) {
  return type >= FSLLexer::K_SPLIT && type <= FSLLexer::K_TMA_STORE;
}

/// Turns ANTLR's expected-token set into a short English list.
std::string describeExpectedSet(const antlr4::misc::IntervalSet &expected,
                                const antlr4::dfa::Vocabulary &vocabulary) {
  std::set<size_t> types;
  for (size_t type : expected.toList())
    types.insert(type);
  std::vector<std::string> parts;
  auto take = [&](std::initializer_list<size_t> group, const char *description) {
    for (size_t type : group)
      if (!types.count(type))
        return;
    for (size_t type : group)
      types.erase(type);
    parts.push_back(description);
  };
  take({FSLLexer::IMPORT, FSLLexer::FN, FSLLexer::FUSION, FSLLexer::SCHEDULE},
       "a declaration (import, fn, fusion or schedule)");
  bool nameExpected = types.count(FSLLexer::IDENT) != 0;
  if (types.count(FSLLexer::INT) && types.count(FSLLexer::FLOAT) && nameExpected &&
      types.count(FSLLexer::LPAREN)) {
    for (size_t type :
         {FSLLexer::INT, FSLLexer::FLOAT, FSLLexer::TRUE, FSLLexer::FALSE, FSLLexer::LPAREN,
          FSLLexer::MINUS, FSLLexer::NOT, FSLLexer::ELEMENT_TYPE, FSLLexer::IDENT})
      types.erase(type);
    parts.push_back("an expression");
  }
  if (types.count(FSLLexer::K_SPLIT) && types.count(FSLLexer::K_VECTORIZE) && !nameExpected) {
    for (auto it = types.begin(); it != types.end();)
      it = isDirectiveWord(*it) ? types.erase(it) : std::next(it);
    parts.push_back("a schedule directive");
  }
  if (nameExpected || (!parts.empty() && parts.back() == "an expression")) {
    // Directive words are names outside directives; do not list them one by one.
    for (auto it = types.begin(); it != types.end();)
      it = isDirectiveWord(*it) ? types.erase(it) : std::next(it);
  }
  for (size_t type : types)
    parts.push_back(describeExpected(vocabulary, type));
  if (parts.empty())
    return "something else";
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i != 0)
      text += i + 1 == parts.size() ? " or " : ", ";
    text += parts[i];
  }
  return text;
}

class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  SyntaxErrorListener(DiagnosticEngine &diagnostics, const TokenLocator &locator,
                      const std::vector<const antlr4::Token *> &unclosedAtEnd,
                      const std::set<size_t> &lexicallyBad)
      : diagnostics_(diagnostics), locator_(locator), unclosedAtEnd_(unclosedAtEnd),
        lexicallyBad_(lexicallyBad) {}

  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offending, size_t, size_t,
                   const std::string &, std::exception_ptr) override {
    auto *parser = static_cast<antlr4::Parser *>(recognizer);
    // ANTLR may report the same spot twice while it recovers; once is enough.
    if (offending && offending->getTokenIndex() == lastReportedToken_)
      return;
    // A token already reported by the lexer pass (an unterminated string) needs no second error.
    if (offending && lexicallyBad_.count(offending->getStartIndex()))
      return;
    std::string found = "end of file";
    llvm::SMRange range(locator_.end(), locator_.end());
    if (offending && offending->getType() != antlr4::Token::EOF) {
      found = "'" + offending->getText() + "'";
      range = locator_.range(offending);
    }
    if (offending)
      lastReportedToken_ = offending->getTokenIndex();
    {
      auto report = diagnostics_.report(
          DiagId::SyntaxError, range, found,
          describeExpectedSet(parser->getExpectedTokens(), parser->getVocabulary()));
      // At the end of the file the likely cause is a bracket left open.
      if ((!offending || offending->getType() == antlr4::Token::EOF) && !unclosedAtEnd_.empty())
        report.note(DiagId::NoteOpenedHere, locator_.range(unclosedAtEnd_.back()),
                    unclosedAtEnd_.back()->getText());
    }
    if (diagnostics_.limitReached())
      throw StopParsing{};
  }

private:
  DiagnosticEngine &diagnostics_;
  const TokenLocator &locator_;
  const std::vector<const antlr4::Token *> &unclosedAtEnd_;
  const std::set<size_t> &lexicallyBad_;
  size_t lastReportedToken_ = static_cast<size_t>(-1);
};

bool isOpening(size_t type) {
  return type == FSLLexer::LPAREN || type == FSLLexer::LBRACK || type == FSLLexer::LBRACE;
}
bool isClosing(size_t type) {
  return type == FSLLexer::RPAREN || type == FSLLexer::RBRACK || type == FSLLexer::RBRACE;
}
bool isBinaryOperator(size_t type) {
  switch (type) {
  case FSLLexer::STAR:
  case FSLLexer::SLASH:
  case FSLLexer::PLUS:
  case FSLLexer::MINUS:
  case FSLLexer::LT:
  case FSLLexer::LE:
  case FSLLexer::GT:
  case FSLLexer::GE:
  case FSLLexer::EQ:
  case FSLLexer::NE:
  case FSLLexer::AND:
  case FSLLexer::OR:
    return true;
  default:
    return false;
  }
}

} // namespace

std::unique_ptr<ast::File> parseFile(llvm::SourceMgr &sources, unsigned bufferId,
                                     DiagnosticEngine &diagnostics, ParseLimits limits) {
  const llvm::MemoryBuffer *buffer = sources.getMemoryBuffer(bufferId);
  llvm::StringRef text = buffer->getBuffer();
  unsigned errorsBefore = diagnostics.errorCount();
  auto failed = [&] { return diagnostics.errorCount() != errorsBefore; };

  size_t badByte = findInvalidUtf8(text);
  if (badByte != llvm::StringRef::npos) {
    llvm::SMLoc at = llvm::SMLoc::getFromPointer(text.data() + badByte);
    diagnostics.report(
        DiagId::InvalidUtf8, llvm::SMRange(at, llvm::SMLoc::getFromPointer(at.getPointer() + 1)),
        llvm::utohexstr(static_cast<unsigned char>(text[badByte]), /*LowerCase=*/false, 2));
    return nullptr;
  }

  TokenLocator locator(text);
  antlr4::ANTLRInputStream input(text.str());
  FSLLexer lexer(&input);
  lexer.removeErrorListeners(); // BAD_CHARACTER matches anything the lexer cannot.

  // Lex everything first: lexical errors are reported here, once each, and the parser
  // sees only well-formed tokens.
  std::vector<std::unique_ptr<antlr4::Token>> tokens;
  // Start indices of tokens that had a lexical error or follow one: a syntax error there
  // would only repeat it.
  std::set<size_t> lexicallyBad;
  bool afterLexicalError = false;
  bool sawDeclaration = false;
  for (;;) {
    std::unique_ptr<antlr4::Token> token = lexer.nextToken();
    size_t type = token->getType();
    if (afterLexicalError && token->getChannel() == antlr4::Token::DEFAULT_CHANNEL &&
        type != FSLLexer::BAD_CHARACTER) {
      lexicallyBad.insert(token->getStartIndex());
      afterLexicalError = false;
    }
    if (type == antlr4::Token::EOF) {
      tokens.push_back(std::move(token));
      break;
    }
    if (token->getChannel() == antlr4::Token::DEFAULT_CHANNEL)
      sawDeclaration = true;
    if (type == FSLLexer::BAD_CHARACTER) {
      diagnostics.report(DiagId::InvalidCharacter, locator.range(token.get()),
                         describeCharacter(token->getText()));
      afterLexicalError = true;
      if (diagnostics.limitReached())
        return nullptr;
      continue;
    }
    if (type == FSLLexer::UNTERMINATED_STRING) {
      diagnostics.report(DiagId::UnterminatedString, locator.range(token.get()));
      lexicallyBad.insert(token->getStartIndex());
      afterLexicalError = true;
      static_cast<antlr4::CommonToken *>(token.get())->setType(FSLLexer::STRING);
    }
    if (type == FSLLexer::STAR && !tokens.empty() && tokens.back()->getType() == FSLLexer::SLASH &&
        tokens.back()->getStopIndex() + 1 == token->getStartIndex()) {
      // A terminated `/*` would have lexed as a comment: this one runs to the end.
      diagnostics.report(DiagId::UnterminatedBlockComment,
                         locator.range(tokens.back().get(), token.get()));
      tokens.pop_back();
      for (;;) {
        std::unique_ptr<antlr4::Token> rest = lexer.nextToken();
        if (rest->getType() == antlr4::Token::EOF) {
          tokens.push_back(std::move(rest));
          break;
        }
      }
      break;
    }
    if (type == FSLLexer::INT) {
      int64_t value;
      if (llvm::StringRef(token->getText()).getAsInteger(10, value))
        diagnostics.report(DiagId::IntegerTooLarge, locator.range(token.get()), token->getText());
    }
    tokens.push_back(std::move(token));
  }
  if (!sawDeclaration && !failed()) {
    diagnostics.report(DiagId::EmptyFile, llvm::SMLoc::getFromPointer(text.data()));
    return nullptr;
  }

  // The generated parser recurses once per nesting level and once per operator of a
  // left-deep chain; refuse inputs that would exhaust the stack before parsing them.
  std::vector<const antlr4::Token *> open;
  unsigned prefixRun = 0, operators = 0;
  for (const auto &token : tokens) {
    size_t type = token->getType();
    if (token->getChannel() != antlr4::Token::DEFAULT_CHANNEL)
      continue;
    if (isOpening(type)) {
      open.push_back(token.get());
      if (open.size() > limits.maxNesting) {
        diagnostics.report(DiagId::NestingTooDeep, locator.range(token.get()), limits.maxNesting);
        return nullptr;
      }
    } else if (isClosing(type) && !open.empty()) {
      open.pop_back();
    }
    bool prefix = type == FSLLexer::MINUS || type == FSLLexer::NOT;
    prefixRun = prefix ? prefixRun + 1 : 0;
    if (prefixRun > limits.maxNesting) {
      diagnostics.report(DiagId::NestingTooDeep, locator.range(token.get()), limits.maxNesting);
      return nullptr;
    }
    if (type == FSLLexer::SEMI || type == FSLLexer::LBRACE || type == FSLLexer::RBRACE)
      operators = 0;
    else if (isBinaryOperator(type) && ++operators > limits.maxOperatorsPerStatement) {
      diagnostics.report(DiagId::ExpressionTooLong, locator.range(token.get()),
                         limits.maxOperatorsPerStatement);
      return nullptr;
    }
  }

  antlr4::ListTokenSource source(std::move(tokens));
  antlr4::CommonTokenStream stream(&source);
  FSLParser parser(&stream);
  SyntaxErrorListener listener(diagnostics, locator, open, lexicallyBad);
  parser.removeErrorListeners();
  parser.addErrorListener(&listener);
  FSLParser::FileContext *tree = nullptr;
  try {
    tree = parser.file();
  } catch (const StopParsing &) {
    return nullptr;
  }
  if (failed())
    return nullptr;

  auto file = buildAST(tree, stream, locator, diagnostics);
  if (failed() || !file)
    return nullptr;
  file->path = buffer->getBufferIdentifier().str();
  return file;
}

} // namespace fsl
