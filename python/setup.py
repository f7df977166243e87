"""Builds the fslc wheel: python/fslc, and from the CMake build and the repository the
pieces it runs with, laid out as a prefix inside the package (fslc/_places.py):

    fslc/lib/libfsl.so                 the C API (target fsl_shared)
    fslc/lib/libantlr4-runtime.so.*    the copy the build puts next to it (RUNPATH $ORIGIN)
    fslc/bin/fslc                      the compiler (target fslc), for `python -m fslc`
    fslc/share/fslc/stdlib/            std/*.fsl and targets/*.toml
    fslc/include/fsl/*.h               the C API's headers, for the compiled op path
                                       (fslc/_ops/ext.cpp, built on first use)

The build directory is $FSLC_BUILD_DIR, else the repository's build/; both targets must
be built there first, and setuptools works in its python-wheel/. The copies are stripped
of debug information (strip, binutils).
The metadata is in pyproject.toml; the version is the CMake project's.
"""

import glob
import os
import re
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70.1 has its own
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def project_version():
    """VERSION of project(fslc ...) in the top-level CMakeLists.txt."""
    with open(os.path.join(ROOT, "CMakeLists.txt")) as cmake:
        match = re.search(r"^project\(fslc VERSION ([0-9.]+)", cmake.read(), re.MULTILINE)
    if not match:
        raise SystemExit("setup.py: no `project(fslc VERSION ...)` in %s/CMakeLists.txt" % ROOT)
    return match.group(1)


def build_dir():
    build = os.environ.get("FSLC_BUILD_DIR") or os.path.join(ROOT, "build")
    return os.path.abspath(build)


def built_files():
    """(source, destination inside the package) for the build's outputs; exits naming
    what is missing and how to build it."""
    build = build_dir()
    library = os.path.join(build, "lib", "libfsl.so")
    antlr = sorted(glob.glob(os.path.join(build, "lib", "libantlr4-runtime.so*")))
    executable = os.path.join(build, "bin", "fslc")
    missing = [path for path in (library, executable) if not os.path.isfile(path)]
    if not antlr:
        missing.append(os.path.join(build, "lib", "libantlr4-runtime.so.*"))
    if missing:
        raise SystemExit(
            "setup.py: the wheel needs a CMake build of fslc (FSLC_BUILD_DIR=%s); missing:\n  %s\n"
            "build it with `cmake --build %s --target fslc fsl_shared`, or set FSLC_BUILD_DIR"
            % (build, "\n  ".join(missing), build))
    files = [(library, "lib/libfsl.so"), (executable, "bin/fslc")]
    files += [(path, "lib/" + os.path.basename(path)) for path in antlr]
    return files


def stdlib_files():
    stdlib = os.path.join(ROOT, "stdlib")
    files = []
    for directory, _, names in os.walk(stdlib):
        for name in sorted(names):
            source = os.path.join(directory, name)
            files.append((source, "share/fslc/stdlib/" + os.path.relpath(source, stdlib)))
    if not any(d.endswith("targets/h200.toml") for _, d in files):
        raise SystemExit("setup.py: %s has no targets/ (not a source tree of fslc?)" % stdlib)
    return files


def header_files():
    """The C API's headers fslc/_ops/ext.cpp includes (fslc/_ops/build.py)."""
    files = [(os.path.join(ROOT, "jit", "include", "fsl", name), "include/fsl/" + name)
             for name in ("compiler.h", "jit_session.h")]
    files.append((os.path.join(ROOT, "runtime", "include", "fsl", "runtime.h"), "include/fsl/runtime.h"))
    missing = [source for source, _ in files if not os.path.isfile(source)]
    if missing:
        raise SystemExit("setup.py: missing C API headers:\n  %s" % "\n  ".join(missing))
    return files


class build_with_fslc(build_py):
    """build_py, plus the build's outputs and the stdlib inside the package."""

    def run(self):
        super().run()
        strip = shutil.which("strip")
        if not strip:
            raise SystemExit("setup.py: strip (Debian package binutils) is needed to copy the binaries")
        package = os.path.join(self.build_lib, "fslc")
        for source, destination in built_files() + stdlib_files() + header_files():
            target = os.path.join(package, destination)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(os.path.realpath(source), target)
            if destination.startswith(("lib/", "bin/")):
                subprocess.run([strip, "--strip-debug", target], check=True)


class BinaryDistribution(Distribution):
    """Not pure: the package carries x86-64 binaries, so the wheel is a platform one and
    installs into platlib (at the wheel's root, not in its .data/purelib)."""

    def has_ext_modules(self):
        return True


class platform_wheel(bdist_wheel):
    """A wheel for any Python 3 on this platform (the Python side is ctypes, no extension
    module): tagged py3-none-<platform>."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


# setuptools' own intermediate files go into the CMake build directory, not next to
# this file: python/ stays clean, and each build directory has its own.
WORK = os.path.join(build_dir(), "python-wheel")
os.makedirs(WORK, exist_ok=True)

setup(
    version=project_version(),
    distclass=BinaryDistribution,
    cmdclass={"build_py": build_with_fslc, "bdist_wheel": platform_wheel},
    options={"build": {"build_base": WORK}, "egg_info": {"egg_base": WORK}},
)
