#!/usr/bin/env bash
# The installed package, as a user of it sees it:
#  1. cmake --install into a temporary prefix;
#  2. tests/install/consumer, configured against it with find_package(fslc), builds
#     fsl_add_library twice (H=1024, H=2048; two NAMEs) into one executable, which runs
#     without a GPU (its launchers refuse wrong sizes before any CUDA call) and links no
#     NVRTC; and a program of libfsl.so (fslc::fsl, fsl/compiler.h, fsl/jit_session.h);
#  3. Ninja tracks the .fsl file that the fusion imports, through fslc's depfile: touching
#     it reruns fslc for both libraries (and nothing else: the outputs are unchanged), and
#     a build with nothing changed does nothing;
#  4. the same with the Makefiles generator: after the touch, one build reruns fslc and
#     the next does nothing (the custom command's stamp file);
#  5. the prefix moved elsewhere still works: its fslc finds the copy's share/fslc/stdlib,
#     with no option or environment variable saying so, and the ANTLR runtime in the
#     prefix's lib/, with LD_LIBRARY_PATH empty and the system's copy hidden.
# usage: run.sh BUILD_DIR SOURCE_DIR WORK_DIR CMAKE NINJA NVCC [MAKE]
set -euo pipefail
build="$1" root="$2" work="$3" cmake="$4" ninja="$5" nvcc="$6" make="${7:-make}"
rm -rf "$work" && mkdir -p "$work"
# The installed fslc must find everything by itself.
unset FSLC_STDLIB FSL_STDLIB

step() { echo "--- $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "install into $work/prefix"
prefix="$work/prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log"
for file in bin/fslc lib/libfsl_jit.a include/fsl/runtime.h include/fsl/jit.h \
            include/fsl/device.cuh include/fsl/compiler.h include/fsl/jit_session.h \
            share/fslc/stdlib/std/norms.fsl \
            share/fslc/stdlib/targets/h200.toml lib/cmake/fslc/fslcConfig.cmake \
            lib/cmake/fslc/fslcConfigVersion.cmake lib/cmake/fslc/FslcAddLibrary.cmake \
            lib/libfsl.so share/fslc/python/fslc/__init__.py; do
  [ -f "$prefix/$file" ] || fail "the install has no $file"
done
# fslc's ANTLR runtime, by the name fslc asks the loader for, next to libfsl.so.
antlr_soname=$(readelf -d "$prefix/bin/fslc" | sed -n 's/.*NEEDED.*\[\(libantlr4-runtime[^]]*\)\].*/\1/p')
[ -n "$antlr_soname" ] || fail "the installed fslc needs no ANTLR runtime? (readelf -d)"
[ -f "$prefix/lib/$antlr_soname" ] || fail "the install has no lib/$antlr_soname"
readelf -d "$prefix/bin/fslc" | grep -q 'RUNPATH.*\$ORIGIN/../lib' ||
  { readelf -d "$prefix/bin/fslc"; fail "the installed fslc's RUNPATH has no \$ORIGIN/../lib"; }

# The consumer is copied so that step 3 touches a copy, not the source tree.
step "configure and build the consumer against the prefix"
cp -r "$root/tests/install/consumer" "$work/consumer"
consumer="$work/consumer-build"
"$cmake" -S "$work/consumer" -B "$consumer" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_COMPILER="$nvcc" \
  > "$work/configure.log" || { cat "$work/configure.log"; fail "configuring the consumer"; }
"$ninja" -C "$consumer" > "$work/build.log" || { cat "$work/build.log"; fail "building the consumer"; }
"$consumer/consumer"
"$consumer/uses_libfsl"

step "ahead-of-time code links no NVRTC"
# The link line of the executable of generated libraries, and what it needs at run time.
if "$ninja" -C "$consumer" -t commands consumer | grep -i nvrtc; then
  fail "the consumer of generated libraries is linked with NVRTC"
fi
if readelf -d "$consumer/consumer" | grep -i 'NEEDED.*nvrtc'; then
  fail "the consumer of generated libraries needs libnvrtc"
fi

step "nothing changed: nothing to do"
no_work() {
  "$ninja" -C "$consumer" -n > "$work/dry-run.log"
  grep -q "no work to do" "$work/dry-run.log" || { cat "$work/dry-run.log"; fail "$1"; }
}
no_work "a second build with nothing changed has work to do"

step "touching the imported .fsl file reruns fslc for both libraries"
touch "$work/consumer/fsl/lib/activations.fsl"
"$ninja" -C "$consumer" -n > "$work/dry-run.log"
count=$(grep -c "fslc: generating" "$work/dry-run.log" || true)
[ "$count" -eq 2 ] || { cat "$work/dry-run.log"; fail "$count fslc commands after touching the import (want 2)"; }
"$ninja" -C "$consumer" > "$work/rebuild.log" || { cat "$work/rebuild.log"; fail "rebuilding"; }
grep -q "fslc: generating gated_1024" "$work/rebuild.log" || fail "the rebuild did not run fslc"
# The touch changed no generated file: fslc leaves them as they are and Ninja (restat)
# compiles nothing again.
if grep -q "Building CUDA" "$work/rebuild.log"; then
  cat "$work/rebuild.log"; fail "unchanged generated files were compiled again"
fi
no_work "the build after the rebuild has work to do"

step "Makefiles: after a touch, one build reruns fslc, the next does nothing"
make_build="$work/consumer-make"
"$cmake" -S "$work/consumer" -B "$make_build" -G "Unix Makefiles" -DCMAKE_MAKE_PROGRAM="$make" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_COMPILER="$nvcc" \
  > "$work/configure-make.log" || { cat "$work/configure-make.log"; fail "configuring with Makefiles"; }
"$make" -C "$make_build" consumer > "$work/make.log" 2>&1 || { cat "$work/make.log"; fail "make"; }
"$make_build/consumer"
# Make compares times to the second on some file systems: let the touch be later.
sleep 1
touch "$work/consumer/fsl/lib/activations.fsl"
"$make" -C "$make_build" consumer > "$work/make-touched.log" 2>&1 ||
  { cat "$work/make-touched.log"; fail "make after the touch"; }
count=$(grep -c "fslc: generating" "$work/make-touched.log" || true)
[ "$count" -eq 2 ] || { cat "$work/make-touched.log"; fail "$count fslc runs after the touch (want 2)"; }
if grep -q "Building CUDA" "$work/make-touched.log"; then
  cat "$work/make-touched.log"; fail "make compiled unchanged generated files again"
fi
"$make" -C "$make_build" consumer > "$work/make-again.log" 2>&1 ||
  { cat "$work/make-again.log"; fail "make, the second time"; }
if grep -E "fslc: generating|Building|Linking" "$work/make-again.log"; then
  cat "$work/make-again.log"; fail "the second make after the touch did work again"
fi

step "the prefix moved elsewhere"
moved="$work/moved"
mv "$prefix" "$moved"
# Text that only the copy's stdlib has: a target description and a module.
sed -i 's/^description = .*/description = "H200 of the copied prefix"/' \
  "$moved/share/fslc/stdlib/targets/h200.toml"
printf 'fn install_test_double(x) = x + x;\n' > "$moved/share/fslc/stdlib/std/install_test.fsl"
cat > "$work/uses_copy.fsl" <<'EOF'
import "std/install_test.fsl";

fusion doubled(x: f32[N]) -> (y: f32[N]) {
    y = install_test_double(x);
}
EOF
cd "$work"  # neither the source tree nor the prefix

# The moved fslc on a machine without Debian's ANTLR runtime: in a private mount
# namespace, every copy the loader could find outside the prefix is covered by an empty
# file, and LD_LIBRARY_PATH is empty. Where namespaces are not permitted, the loader's
# own trace (LD_DEBUG=libs) shows which file it took instead.
empty="$work/empty-file"
: > "$empty"
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
system_antlr=$("$ldconfig" -p | sed -n 's/.*libantlr4-runtime.*=> //p' | xargs -r readlink -f | sort -u)
if unshare -rm true 2>/dev/null; then
  echo "hiding the system ANTLR runtime (unshare -rm, bind mounts): $system_antlr"
  unshare -rm bash -c '
    empty=$1; shift; fslc=$1; shift; input=$1; shift
    for file in "$@"; do mount --bind "$empty" "$file" || exit 3; done
    # The cover works: the system copy no longer loads.
    for file in "$@"; do [ ! -s "$file" ] || exit 4; done
    LD_LIBRARY_PATH= "$fslc" --emit=check "$input"' \
    hide "$empty" "$moved/bin/fslc" "$root/examples/rms_norm_add.fsl" $system_antlr ||
    fail "the moved fslc does not run with the system ANTLR runtime hidden (exit $?)"
else
  echo "unshare is not permitted: checking the loader's choice with LD_DEBUG=libs"
  LD_LIBRARY_PATH= LD_DEBUG=libs "$moved/bin/fslc" --version > /dev/null 2> "$work/ld-debug.log" ||
    { cat "$work/ld-debug.log"; fail "the moved fslc does not run"; }
  grep -q "calling init: $moved/lib/$antlr_soname" "$work/ld-debug.log" ||
    { grep -i antlr "$work/ld-debug.log"; fail "the moved fslc loads an ANTLR runtime outside its prefix"; }
fi

"$moved/bin/fslc" --print-targets > "$work/targets.txt"
grep -q "H200 of the copied prefix" "$work/targets.txt" ||
  { cat "$work/targets.txt"; fail "fslc --print-targets does not show the copy's h200.toml"; }
"$moved/bin/fslc" --emit=check "$work/uses_copy.fsl" ||
  fail "the copied fslc does not import from the copy's stdlib"
"$moved/bin/fslc" --emit=check "$root/examples/rms_norm_add.fsl"
"$moved/bin/fslc" "$root/examples/rms_norm_add.fsl" -o "$work/out"
[ -f "$work/out/rms_norm_add.cu" ] && [ -f "$work/out/rms_norm_add.h" ] ||
  fail "the copied fslc wrote no rms_norm_add.cu/.h"

# The Python package of the copy (no torch needed) finds the copy's libfsl.so and stdlib.
PYTHONPATH="$moved/share/fslc/python" python3 - "$moved" > "$work/python.log" 2>&1 <<'PY' ||
import sys, fslc
prog = fslc.load(sys.argv[1] + "/share/fslc/stdlib/std/norms.fsl", torch_ops=False)
assert prog._lib.path.startswith(sys.argv[1] + "/lib/"), prog._lib.path
assert prog.stdlib == sys.argv[1] + "/share/fslc/stdlib", prog.stdlib
assert "rms_norm_add" in prog.fusions, prog.fusions
PY
  { cat "$work/python.log"; fail "the copied Python package does not load the copy's libfsl.so"; }

# The package is relocatable too: configuring against the copy points at the copy's fslc.
"$cmake" -S "$work/consumer" -B "$work/consumer-moved" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" \
  -DCMAKE_PREFIX_PATH="$moved" -DCMAKE_CUDA_COMPILER="$nvcc" > "$work/configure-moved.log" ||
  { cat "$work/configure-moved.log"; fail "configuring the consumer against the copy"; }
grep -q "$moved/bin/fslc" "$work/consumer-moved/build.ninja" ||
  fail "the consumer configured against the copy does not run the copy's fslc"

echo "install: all checks passed"
