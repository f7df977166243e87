#!/usr/bin/env bash
# Installs the Debian 12 packages fslc needs, only those missing.
# The CUDA toolkit is no Debian package here: CMake finds it through nvcc on PATH,
# CUDAToolkit_ROOT or /usr/local/cuda (NVRTC for fslc, nvcc for the tests).
set -euo pipefail

packages=(
  cmake ninja-build g++ python3
  antlr4 libantlr4-runtime-dev           # grammar/FSL.g4 -> C++ parser, and its runtime
  llvm-19-dev libzstd-dev zlib1g-dev     # LLVM Support (+ what its CMake package links)
  libxml2-dev libedit-dev libffi-dev libncurses-dev
  llvm-19-tools                          # FileCheck, lit, not
  libtomlplusplus-dev doctest-dev
  clang-19 libclang-rt-19-dev            # the sanitizer build and libFuzzer (scripts/sanitize.sh)
  python3-setuptools python3-wheel python3-pip python3-venv  # the Python wheel (python/)
  libmlir-19-dev                         # fsl-lsp's LSP layer (MLIR's lsp-server-support)
  python3-torch libtorch-dev pybind11-dev  # CPU torch for the compiled op path's host test (python-ops-kernel)
)
# The VS Code extension's tests run on Node.js; take Debian's only if none is installed.
if ! command -v npm > /dev/null; then packages+=(nodejs npm); fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
