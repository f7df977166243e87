// ForEach.h — a macro applied to each element of a list, for the field lists of Stmt.def.
//
// FSL_FOR_EACH(M, a, b, c)       -> M(a) M(b) M(c)
// FSL_FOR_EACH_LIST(M, a, b, c)  -> M(a), M(b), M(c)   (a parameter or argument list)
// Both give nothing for an empty list. The expansion is rescanned 4^3 = 64 times, enough
// for 64 elements (a statement kind has at most a few dozen fields). The technique is the
// usual one for C++20 (__VA_OPT__ with a deferred recursive step).
#pragma once

#define FSL_PP_PARENS ()
#define FSL_PP_EXPAND(...)                                                                         \
  FSL_PP_EXPAND3(FSL_PP_EXPAND3(FSL_PP_EXPAND3(FSL_PP_EXPAND3(__VA_ARGS__))))
#define FSL_PP_EXPAND3(...)                                                                        \
  FSL_PP_EXPAND2(FSL_PP_EXPAND2(FSL_PP_EXPAND2(FSL_PP_EXPAND2(__VA_ARGS__))))
#define FSL_PP_EXPAND2(...)                                                                        \
  FSL_PP_EXPAND1(FSL_PP_EXPAND1(FSL_PP_EXPAND1(FSL_PP_EXPAND1(__VA_ARGS__))))
#define FSL_PP_EXPAND1(...) __VA_ARGS__

#define FSL_FOR_EACH(macro, ...) __VA_OPT__(FSL_PP_EXPAND(FSL_PP_EACH_STEP(macro, __VA_ARGS__)))
#define FSL_PP_EACH_STEP(macro, first, ...)                                                        \
  macro(first) __VA_OPT__(FSL_PP_EACH_AGAIN FSL_PP_PARENS(macro, __VA_ARGS__))
#define FSL_PP_EACH_AGAIN() FSL_PP_EACH_STEP

#define FSL_FOR_EACH_LIST(macro, ...)                                                              \
  __VA_OPT__(FSL_PP_EXPAND(FSL_PP_LIST_STEP(macro, __VA_ARGS__)))
#define FSL_PP_LIST_STEP(macro, first, ...)                                                        \
  macro(first) __VA_OPT__(, FSL_PP_LIST_AGAIN FSL_PP_PARENS(macro, __VA_ARGS__))
#define FSL_PP_LIST_AGAIN() FSL_PP_LIST_STEP
