"""Where the package finds libfsl.so, the fslc executable, the stdlib and NVRTC.

The package can sit in three layouts, recognized by its own path:

- a wheel (`pip install fslc-*.whl`): the package is a prefix of its own,
  `fslc/lib/libfsl.so` (with its copy of the ANTLR runtime), `fslc/bin/fslc` and
  `fslc/share/fslc/stdlib`, the layout `cmake --install` gives a prefix;
- a CMake installation: `<prefix>/share/fslc/python/fslc`, next to `<prefix>/lib`,
  `<prefix>/bin` and `<prefix>/share/fslc/stdlib`;
- the source tree: `python/fslc` of a repository whose build is in `build/`.

Each function returns (path, where) pairs in the order they are tried; `where` names the
place in error messages (docs/python.md).
"""

import glob
import os
import sys

PACKAGE = os.path.dirname(os.path.abspath(__file__))
LIBRARY_NAME = "libfsl.so"
EXECUTABLE_NAME = "fslc"


def installation_prefix(package=PACKAGE):
    """<prefix> when the package is <prefix>/share/fslc/python/fslc, else None."""
    python = os.path.dirname(package)
    share_fslc = os.path.dirname(python)
    share = os.path.dirname(share_fslc)
    layout = (os.path.basename(python), os.path.basename(share_fslc), os.path.basename(share))
    if layout != ("python", "fslc", "share"):
        return None
    return os.path.dirname(share)


def repository(package=PACKAGE):
    """The source tree when the package is its python/fslc, else None."""
    root = os.path.dirname(os.path.dirname(package))
    if os.path.basename(os.path.dirname(package)) != "python":
        return None
    if not os.path.isfile(os.path.join(root, "CMakeLists.txt")):
        return None
    return root


def library_places(package=PACKAGE):
    """Where libfsl.so is looked for after `library=` and $FSL_LIBRARY."""
    places = [(os.path.join(package, "lib", LIBRARY_NAME), "the package's own")]
    prefix = installation_prefix(package)
    if prefix:
        places.append((os.path.join(prefix, "lib", LIBRARY_NAME), "the installation's lib/"))
    root = repository(package)
    if root:
        places.append((os.path.join(root, "build", "lib", LIBRARY_NAME), "the repository's build tree"))
    places.append((LIBRARY_NAME, "the loader's search path"))
    return places


def executable_places(package=PACKAGE):
    """Where the fslc executable is looked for (never on PATH: in an environment where the
    wheel is installed, `fslc` on PATH is this package's own console script)."""
    places = [(os.path.join(package, "bin", EXECUTABLE_NAME), "the package's own")]
    prefix = installation_prefix(package)
    if prefix:
        places.append((os.path.join(prefix, "bin", EXECUTABLE_NAME), "the installation's bin/"))
    root = repository(package)
    if root:
        places.append((os.path.join(root, "build", "bin", EXECUTABLE_NAME), "the repository's build tree"))
    return places


def include_places(package=PACKAGE):
    """Where the C API's headers (fsl/jit_session.h, fsl/runtime.h) are looked for, for
    the compiled op path (fslc/_ops/build.py)."""
    places = [(os.path.join(package, "include"), "the package's own")]
    prefix = installation_prefix(package)
    if prefix:
        places.append((os.path.join(prefix, "include"), "the installation's include/"))
    root = repository(package)
    if root:
        places.append((os.path.join(root, "jit", "include"), "the repository's jit/include"))
        places.append((os.path.join(root, "runtime", "include"), "the repository's runtime/include"))
    return places


def stdlib_places(package=PACKAGE):
    """Where the stdlib is looked for after `stdlib=` and $FSLC_STDLIB."""
    places = [(os.path.join(package, "share", "fslc", "stdlib"), "the package's own")]
    prefix = installation_prefix(package)
    if prefix:
        places.append((os.path.join(prefix, "share", "fslc", "stdlib"), "the installation's"))
    root = repository(package)
    if root:
        places.append((os.path.join(root, "stdlib"), "the repository's"))
    return places


def find_stdlib(stdlib=None, package=PACKAGE):
    """The stdlib directory: `stdlib`, else $FSLC_STDLIB, else the first of
    stdlib_places() that holds targets/, else None (libfsl.so's own default)."""
    if stdlib is None:
        stdlib = os.environ.get("FSLC_STDLIB") or None
    if stdlib is None:
        for path, _ in stdlib_places(package):
            if os.path.isdir(os.path.join(path, "targets")):
                stdlib = path
                break
    return None if stdlib is None else os.path.abspath(stdlib)


def nvrtc_places():
    """NVRTC libraries outside the loader's path: PyTorch's CUDA wheels keep them in
    site-packages/nvidia/*/lib, a toolkit in $CUDA_HOME (or $CUDA_PATH, /usr/local/cuda)."""
    places = []
    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            places += sorted(glob.glob(os.path.join(entry, "nvidia", "*", "lib", "libnvrtc.so.1*")))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
                places += sorted(glob.glob(os.path.join(home, sub, "libnvrtc.so.1*")))
    return [p for p in places
            if "alt" not in os.path.basename(p) and "builtins" not in os.path.basename(p)]
