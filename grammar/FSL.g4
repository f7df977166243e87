// FSL.g4 — the only grammar of the fusion and schedule language.
//
// The C++ parser is generated from this file at build time (antlr4 -Dlanguage=Cpp).
// docs/language.md is the normative description; this file is its syntax half.
//
// Keywords are split in two groups:
//  - hard keywords (fusion, schedule, let, over, types...) can never be names;
//  - directive words (split, by, tile, registers...) are keywords only where a
//    directive expects them: the `name` rule accepts them as ordinary names, so a
//    tensor may be called `tile` or `shared`.
grammar FSL;

// ---------------------------------------------------------------------------
// Files and declarations
// ---------------------------------------------------------------------------

file : declaration* EOF ;

declaration
    : importDecl
    | fnDecl
    | fusionDecl
    | scheduleDecl
    ;

importDecl : IMPORT STRING SEMI ;

// fn gelu(x) = 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
fnDecl : FN name LPAREN (name (COMMA name)*)? RPAREN ASSIGN expr SEMI ;

// fusion f<H = 4096>(x: bf16[T, H], eps: f32 = 1e-6) -> (y: bf16[T, H]) { ... }
// `backward g, h` names the fusions that compute f's gradients, and `grad_r = grad_x` says
// that input r's gradient is input x's (docs/language.md, Gradients).
fusionDecl
    : FUSION name staticDims? LPAREN (param (COMMA param)*)? COMMA? RPAREN
      (ARROW LPAREN output (COMMA output)* COMMA? RPAREN)?
      (K_BACKWARD backward+=backwardItem (COMMA backward+=backwardItem)*)?
      fusionBody
    ;

backwardItem : target=name (ASSIGN source=name)? ;

staticDims : LT staticDim (COMMA staticDim)* GT ;
staticDim  : name (ASSIGN INT)? ;

param  : name COLON INOUT? STRIDED? type (ASSIGN expr)? ;
output : name COLON type ;

// A scalar is an element type alone; a tensor lists its dimensions by name.
type : ELEMENT_TYPE (LBRACK name (COMMA name)* RBRACK)? ;

fusionBody : LBRACE statement* RBRACE ;

statement
    : LET name (COLON type)? ASSIGN expr SEMI      # letStatement
    | name ASSIGN expr SEMI                        # assignStatement
    ;

// ---------------------------------------------------------------------------
// Expressions, lowest precedence last
// ---------------------------------------------------------------------------

expr
    : primary                                            # primaryExpr
    | op=(MINUS | NOT) expr                              # unaryExpr
    | expr op=(STAR | SLASH) expr                        # binaryExpr
    | expr op=(PLUS | MINUS) expr                        # binaryExpr
    | expr op=(LT | LE | GT | GE) expr                   # binaryExpr
    | expr op=(EQ | NE) expr                             # binaryExpr
    | expr op=AND expr                                   # binaryExpr
    | expr op=OR expr                                    # binaryExpr
    ;

primary
    : literal                                            # literalPrimary
    | ELEMENT_TYPE LPAREN expr RPAREN                    # castPrimary
    | name LPAREN arguments? RPAREN                      # callPrimary
    | name LBRACK indexClause RBRACK                     # indexPrimary
    | name                                               # namePrimary
    | LPAREN expr RPAREN                                 # parenPrimary
    ;

// `over` ends the argument list of a reduction: sum(x * x, over H).
arguments
    : expr (COMMA expr)* (COMMA overClause)?
    ;

// Indexing a tensor parameter along one named dimension:
//   x[V = label]          select / gather: the element at an index (V leaves the result)
//   x[H2 -> H from off]   window: H elements of H2 from `off`, as dimension H
indexClause
    : dim=name ASSIGN expr                               # selectIndex
    | dim=name ARROW window=name (K_FROM expr)?          # windowIndex
    ;

overClause : OVER (name | LPAREN name (COMMA name)* RPAREN) ;

literal : INT | FLOAT | TRUE | FALSE ;

// ---------------------------------------------------------------------------
// Schedules
// ---------------------------------------------------------------------------

scheduleDecl : SCHEDULE name whenClause? scheduleBody ;

scheduleBody
    : LBRACE directive* RBRACE                                   # explicitSchedule
    | ASSIGN AUTO (LPAREN name RPAREN)? (knobBlock | SEMI)       # autoSchedule
    ;

// when T < 132 && T >= 8 && H % 8 == 0
whenClause : WHEN sizeCondition (AND sizeCondition)* ;
sizeCondition : name (PERCENT modulus=INT)? op=(LT | LE | GT | GE | EQ | NE) bound=INT ;

knobBlock : LBRACE knob* RBRACE ;
knob : name ASSIGN literal SEMI ;

// `t.H` restricts a directive to one tensor; `H` alone applies to every tensor having H.
dimRef : name (DOT name)? ;

directive
    : K_SPLIT dimRef (K_BY | K_INTO) INT ARROW LPAREN name COMMA name RPAREN SEMI     # splitDirective
    | K_MERGE LPAREN dimRef COMMA dimRef RPAREN ARROW name SEMI                       # mergeDirective
    | K_REORDER LPAREN dimRef (COMMA dimRef)* RPAREN SEMI                              # reorderDirective
    | K_PARALLELIZE binding (COMMA binding)* SEMI                                     # parallelizeDirective
    | K_VECTORIZE dimRef SEMI                                                         # vectorizeDirective
    | K_UNROLL dimRef (K_BY INT)? SEMI                                                # unrollDirective
    | K_UNSWITCH dimRef SEMI                                                          # unswitchDirective
    | K_PREFETCH dimRef SEMI                                                          # prefetchDirective
    | K_RFACTOR dimRef SEMI                                                           # rfactorDirective
    | K_INLINE (K_ALL | name) SEMI                                                    # inlineDirective
    | K_COMPUTE_AT name dimRef SEMI                                                   # computeAtDirective
    | K_COMPUTE_WITH name SEMI                                                        # computeWithDirective
    | K_PERSISTENT name K_IN memory=(K_REGISTERS | K_SHARED | K_RECOMPUTE) SEMI       # persistentDirective
    | K_CACHE name K_IN memory=(K_SHARED | K_REGISTERS) SEMI                          # cacheDirective
    | K_LAUNCH_BOUNDS INT SEMI                                                        # launchBoundsDirective
    | K_MAXRREGCOUNT INT SEMI                                                         # maxrregcountDirective
    | K_PDL SEMI                                                                      # pdlDirective
    | K_GRID_SYNC SEMI                                                                # gridSyncDirective
    | K_REDUCE form=(K_ONE_PASS | K_TWO_PASS) SEMI                                    # reduceDirective
    | K_FAST_EXP SEMI                                                                 # fastExpDirective
    | K_FAST_TANH SEMI                                                                # fastTanhDirective
    | K_FAST_DIV SEMI                                                                 # fastDivDirective
    | K_MMA OVER name COLON K_TILE intTuple COMMA K_WARP intTuple
          COMMA K_INSTRUCTION name intTuple (COMMA K_SWAP_AB)? SEMI                   # mmaDirective
    | K_PIPELINE INT K_STAGES (K_VIA K_TMA)? SEMI                                     # pipelineDirective
    | K_WARP_SPECIALIZE K_PRODUCER LPAREN K_REGS INT RPAREN COMMA
          K_CONSUMERS LPAREN INT COMMA K_REGS INT RPAREN SEMI                         # warpSpecializeDirective
    | K_TILES tileOrder SEMI                                                          # tilesDirective
    | K_CLUSTER intTuple K_MULTICAST? SEMI                                            # clusterDirective
    | K_EPILOGUE K_VIA (K_REGISTERS | K_SHARED K_TMA_STORE? (COMMA K_TILE intTuple)?) SEMI
                                                                                      # epilogueDirective
    ;

binding : dimRef ARROW PARALLEL_TYPE ;

tileOrder
    : K_ONE_PER_CTA                         # onePerCtaOrder
    | K_PERSISTENT ((K_SWIZZLE | K_HILBERT) INT)?  # persistentOrder
    | K_STREAM_K ((K_SWIZZLE | K_HILBERT) INT)?    # streamKOrder
    | K_SPLIT_K INT                         # splitKOrder
    ;

intTuple : LPAREN INT (COMMA INT)* RPAREN ;

// Any identifier, including the directive words, which are reserved only in directives.
name
    : IDENT
    | K_SPLIT | K_BY | K_INTO | K_MERGE | K_REORDER | K_PARALLELIZE | K_VECTORIZE
    | K_UNROLL | K_UNSWITCH | K_PREFETCH | K_RFACTOR | K_INLINE | K_ALL | K_COMPUTE_AT
    | K_COMPUTE_WITH | K_PERSISTENT | K_IN | K_REGISTERS | K_SHARED | K_RECOMPUTE
    | K_CACHE | K_LAUNCH_BOUNDS | K_MAXRREGCOUNT | K_PDL | K_GRID_SYNC | K_MMA | K_TILE | K_WARP
    | K_INSTRUCTION | K_PIPELINE | K_STAGES | K_VIA | K_TMA | K_WARP_SPECIALIZE
    | K_PRODUCER | K_CONSUMERS | K_REGS | K_TILES | K_ONE_PER_CTA | K_SWIZZLE | K_HILBERT
    | K_STREAM_K | K_SPLIT_K | K_CLUSTER | K_MULTICAST | K_SWAP_AB | K_EPILOGUE | K_TMA_STORE
    | K_REDUCE | K_ONE_PASS | K_TWO_PASS | K_FAST_EXP | K_FAST_TANH | K_FAST_DIV
    | K_FROM | K_BACKWARD
    ;

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

IMPORT   : 'import' ;
FN       : 'fn' ;
FUSION   : 'fusion' ;
SCHEDULE : 'schedule' ;
LET      : 'let' ;
INOUT    : 'inout' ;
STRIDED  : 'strided' ;
OVER     : 'over' ;
WHEN     : 'when' ;
AUTO     : 'auto' ;
TRUE     : 'true' ;
FALSE    : 'false' ;

ELEMENT_TYPE : 'bool' | 'i32' | 'i64' | 'f16' | 'bf16' | 'f32' | 'f64' ;
PARALLEL_TYPE : 'BIDx' | 'BIDy' | 'BIDz' | 'TIDx' | 'TIDy' | 'TIDz' ;

K_SPLIT : 'split' ;
K_BY : 'by' ;
K_INTO : 'into' ;
K_MERGE : 'merge' ;
K_REORDER : 'reorder' ;
K_PARALLELIZE : 'parallelize' ;
K_VECTORIZE : 'vectorize' ;
K_UNROLL : 'unroll' ;
K_UNSWITCH : 'unswitch' ;
K_PREFETCH : 'prefetch' ;
K_RFACTOR : 'rfactor' ;
K_INLINE : 'inline' ;
K_ALL : 'all' ;
K_COMPUTE_AT : 'compute_at' ;
K_COMPUTE_WITH : 'compute_with' ;
K_PERSISTENT : 'persistent' ;
K_IN : 'in' ;
K_REGISTERS : 'registers' ;
K_SHARED : 'shared' ;
K_RECOMPUTE : 'recompute' ;
K_CACHE : 'cache' ;
K_LAUNCH_BOUNDS : 'launch_bounds' ;
K_MAXRREGCOUNT : 'maxrregcount' ;
K_PDL : 'pdl' ;
K_GRID_SYNC : 'grid_sync' ;
K_REDUCE : 'reduce' ;
K_ONE_PASS : 'one_pass' ;
K_TWO_PASS : 'two_pass' ;
K_FAST_EXP : 'fast_exp' ;
K_FAST_TANH : 'fast_tanh' ;
K_FAST_DIV : 'fast_div' ;
K_FROM : 'from' ;
K_BACKWARD : 'backward' ;
K_MMA : 'mma' ;
K_TILE : 'tile' ;
K_WARP : 'warp' ;
K_INSTRUCTION : 'instruction' ;
K_PIPELINE : 'pipeline' ;
K_STAGES : 'stages' ;
K_VIA : 'via' ;
K_TMA : 'tma' ;
K_WARP_SPECIALIZE : 'warp_specialize' ;
K_PRODUCER : 'producer' ;
K_CONSUMERS : 'consumers' ;
K_REGS : 'regs' ;
K_TILES : 'tiles' ;
K_ONE_PER_CTA : 'one_per_cta' ;
K_SWIZZLE : 'swizzle' ;
K_HILBERT : 'hilbert' ;
K_STREAM_K : 'stream_k' ;
K_SPLIT_K : 'split_k' ;
K_CLUSTER : 'cluster' ;
K_MULTICAST : 'multicast' ;
K_SWAP_AB : 'swap_ab' ;
K_EPILOGUE : 'epilogue' ;
K_TMA_STORE : 'tma_store' ;

ARROW  : '->' ;
LE     : '<=' ;
GE     : '>=' ;
EQ     : '==' ;
NE     : '!=' ;
AND    : '&&' ;
OR     : '||' ;
LT     : '<' ;
GT     : '>' ;
ASSIGN : '=' ;
PLUS   : '+' ;
MINUS  : '-' ;
STAR   : '*' ;
SLASH  : '/' ;
PERCENT : '%' ;
NOT    : '!' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACK : '[' ;
RBRACK : ']' ;
LBRACE : '{' ;
RBRACE : '}' ;
COMMA  : ',' ;
SEMI   : ';' ;
COLON  : ':' ;
DOT    : '.' ;

IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;

// Literals are unsigned; `-1` is unary minus applied to 1.
FLOAT
    : DIGITS '.' DIGITS EXPONENT?
    | DIGITS EXPONENT
    ;
INT : DIGITS ;
fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;

STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* ;

// Comments are kept on their own channel: the canonical printer puts them back.
LINE_COMMENT  : '//' ~[\r\n]* -> channel(HIDDEN) ;
// An unterminated `/*` lexes as SLASH STAR; the parser driver reports it.
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN) ;

WS : [ \t\r\n\f]+ -> skip ;

// Anything else is one bad character; the parser driver reports it once.
BAD_CHARACTER : . ;
