#!/usr/bin/env bash
# The installed package, as a user of it sees it:
#  1. cmake --install into a temporary prefix;
#  2. tests/install/consumer, configured against it with find_package(fslc), builds
#     fsl_add_library twice (H=1024, H=2048; two NAMEs) into one executable, which runs
#     without a GPU (its launchers refuse wrong sizes before any CUDA call);
#  3. Ninja tracks the .fsl file that the fusion imports, through fslc's depfile: touching
#     it reruns fslc for both libraries (and nothing else: the outputs are unchanged), and
#     a build with nothing changed does nothing;
#  4. the prefix copied elsewhere (the original removed) still works: its fslc finds the
#     copy's share/fslc/stdlib, with no option or environment variable saying so.
# usage: run.sh BUILD_DIR SOURCE_DIR WORK_DIR CMAKE NINJA NVCC
set -euo pipefail
build="$1" root="$2" work="$3" cmake="$4" ninja="$5" nvcc="$6"
rm -rf "$work" && mkdir -p "$work"
# The installed fslc must find everything by itself.
unset FSLC_STDLIB FSL_STDLIB

step() { echo "--- $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "install into $work/prefix"
prefix="$work/prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log"
for file in bin/fslc lib/libfsl_runtime.a include/fsl/runtime.h include/fsl/jit.h \
            include/fsl/device.cuh share/fslc/stdlib/std/norms.fsl \
            share/fslc/stdlib/targets/h200.toml lib/cmake/fslc/fslcConfig.cmake \
            lib/cmake/fslc/fslcConfigVersion.cmake lib/cmake/fslc/FslcAddLibrary.cmake \
            lib/libfsl.so share/fslc/python/fslc/__init__.py; do
  [ -f "$prefix/$file" ] || fail "the install has no $file"
done

# The consumer is copied so that step 3 touches a copy, not the source tree.
step "configure and build the consumer against the prefix"
cp -r "$root/tests/install/consumer" "$work/consumer"
consumer="$work/consumer-build"
"$cmake" -S "$work/consumer" -B "$consumer" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_COMPILER="$nvcc" \
  > "$work/configure.log" || { cat "$work/configure.log"; fail "configuring the consumer"; }
"$ninja" -C "$consumer" > "$work/build.log" || { cat "$work/build.log"; fail "building the consumer"; }
"$consumer/consumer"

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

step "the prefix copied elsewhere, the original removed"
moved="$work/moved"
cp -a "$prefix" "$moved"
rm -rf "$prefix"
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
