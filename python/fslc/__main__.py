"""`python -m fslc ...` (and the wheel's `fslc` command): runs the fslc compiler with
these arguments.

The compiler is the fslc executable the package carries (fslc/bin/fslc in a wheel), not
a second driver over libfsl.so: the C API compiles one fusion at a time in memory for the
JIT, while fslc has every option, output and diagnostic of docs/driver.md. The package's
own fslc needs the ANTLR runtime copied next to libfsl.so (fslc/lib/) and NVRTC, which
this finds as the library's loader does (fslc/_places.py); it finds the stdlib by itself
(fslc/share/fslc/stdlib, next to its bin/).
"""

import os
import sys

from . import _places


def executable():
    """The fslc executable: the first of _places.executable_places() that exists, and
    its environment (LD_LIBRARY_PATH for the package's own). Raises FileNotFoundError
    naming every place tried."""
    tried = []
    for path, where in _places.executable_places():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            env = dict(os.environ)
            if where == "the package's own":
                directories = [os.path.join(_places.PACKAGE, "lib")]
                directories += [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
                for nvrtc in _places.nvrtc_places():
                    if os.path.dirname(nvrtc) not in directories:
                        directories.append(os.path.dirname(nvrtc))
                env["LD_LIBRARY_PATH"] = os.pathsep.join(directories)
            return path, env
        tried.append("%s (%s): %s" % (path, where, "not executable" if os.path.exists(path) else "no such file"))
    raise FileNotFoundError("cannot find the fslc executable; tried:\n  " + "\n  ".join(tried))


def main(argv=None):
    """Replaces this process with fslc; its exit status is fslc's (2 when it is missing,
    fslc's own status for usage errors)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        path, env = executable()
    except FileNotFoundError as error:
        sys.stderr.write("fslc: %s\n" % error)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(path, ["fslc"] + argv, env)


if __name__ == "__main__":
    sys.exit(main())
