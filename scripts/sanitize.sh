#!/usr/bin/env bash
# The sanitizer job of CI: fslc, its unit tests and the fuzz target built with clang-19,
# AddressSanitizer + UndefinedBehaviorSanitizer (-fno-sanitize-recover=all) and libFuzzer's
# coverage, in build-san/; then the unit, lit and robustness suites against that fslc.
#
# Only those three targets are built, at -O1, the compiler's libraries as unity builds (one
# translation unit per library and 8 files: about a minute less of CI than file by file;
# the unit tests stay file by file, each a program of its own helpers): the whole tree
# under ASan would double the time CI spends compiling, and the other suites (simulator, nvcc, install, extension)
# exercise the same code as the lit tests with tools the sanitizers do not see into.
# The robustness test tries 20 mutated inputs here instead of 300 (the fuzz run after it
# mutates inputs under the same sanitizers for 60 s), each with 60 s where the release
# build's have 20 (a case that takes 1.4 s there took 8 s sanitized, and over 20 s beside
# lit's workers). Every sanitizer report aborts, so a suite that accepts exit code 1
# (robustness, `not` in lit) still fails on one. The fuzz run is tests/fuzz/run.sh, on the
# same build.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FSL_SANITIZE_BUILD_DIR:-$root/build-san}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  "-DCMAKE_C_FLAGS_RELEASE=-O1 -gline-tables-only" "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only" \
  -DFSL_SANITIZE=ON -DFSL_FUZZ=ON -DCMAKE_UNITY_BUILD=ON -DFSL_ROBUSTNESS_CASES=20 -DFSL_ROBUSTNESS_TIME_LIMIT_S=60 > /dev/null
cmake --build "$build" --target fslc fsl_unit_tests fsl_fuzz_driver

source "$root/scripts/sanitizer-env.sh"
# The sanitized simulator runs a matrix product about 13 times slower than the release
# build (16.6 s against 1.2 s of CPU for one stream-K case of matmul/stream-k.test), so
# the eight lit tests that simulate the largest products many times (each 18-73 s in the
# release build) run only in the release build's suite; the other matmul tests simulate
# the same wgmma, TMA and mbarrier code at smaller sizes under the sanitizers. So do the
# ones that simulate whole norm files at thousands of columns or many cluster products
# (heuristics/inner-outer 15 s, lower/clamped-rows 11 s, matmul/cluster 7 s,
# stdlib/training-simulate 6 s in the release build, each minutes sanitized):
# lower/inner-outer/, the other lower/ tests, matmul/persistent and matmul/swap-ab
# simulate the same kernels (clusters included) at small sizes under the sanitizers.
# Likewise the walks of many tiles a CTA (matmul/hilbert-walks, matmul/epilogue-pieces-reuse:
# about 250 s and 160 s of CPU sanitized): hilbert.test and epilogue-pieces.test simulate the same
# lowering at one wave under the sanitizers. And the four slowest of the rest (60-130 s
# each beside lit's other worker), whose lowering other sanitized tests simulate at smaller
# sizes: matmul/split-k (matmul/swap-ab simulates split-K's parts and their sum in the
# kernel), matmul/two-box-tiles (tiles wider than a TMA box: heuristics/matmul and
# matmul/epilogue-pieces), lower/latency (early loads, prefetched batches, one reciprocal
# a row: every norm simulated in lower/ and stdlib/), heuristics/user-guard (guard
# carving: tune/runtime-range and heuristics/runtime-row), matmul/cluster-unaligned (clusters:
# matmul/persistent and matmul/swap-ab) and lower/grid-one-pass-stdlib (the stdlib's
# cross-entropy split across blocks at 66000 logits a row: lower/grid-one-pass simulates
# the same lowering at 1000).
export LIT_FILTER_OUT='matmul/(stream-k|pingpong|epilogues|examples|kn|two-products|hilbert-walks|epilogue-pieces-reuse|split-k|two-box-tiles|cluster-unaligned)\.test|matmul/cluster\.fsl|heuristics/(long-rows|matmul-knobs|inner-outer|user-guard)\.test|lower/(clamped-rows|latency|grid-one-pass-stdlib)\.test|stdlib/training-simulate\.test'
# In parallel: lit's last minutes run one slow test on one core, which the robustness and
# unit suites fill.
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -R '^(unit|lit|robustness)$'
