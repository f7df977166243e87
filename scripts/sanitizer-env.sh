# Sourced by scripts/sanitize.sh and tests/fuzz/run.sh: how sanitized programs report.
# abort_on_error turns every report into SIGABRT, which no test reads as an expected
# "exit 1"; the symbolizer names the lines in the stack traces.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="abort_on_error=1:print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}"
if [ -x /usr/lib/llvm-19/bin/llvm-symbolizer ]; then
  export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-19/bin/llvm-symbolizer
  export UBSAN_SYMBOLIZER_PATH=/usr/lib/llvm-19/bin/llvm-symbolizer
fi
