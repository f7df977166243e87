"""The fslc wheel, built and installed as a user would, offline: `pip wheel` of python/
from the CMake build, `pip install --no-index` into a new venv, then test_capi.py
--installed and test_ops_build.py --installed with the venv's interpreter, against the
installed copy (its libfsl.so, fslc, stdlib, C API headers and extension source; nothing
of python/ on sys.path).

usage: python3 tests/python/wheel_test.py SOURCE_DIR BUILD_DIR WORK_DIR

The interpreter running this builds the wheel: it needs setuptools, wheel, pip and venv
(Debian: python3-setuptools, python3-wheel, python3-pip, python3-venv).
"""

import glob
import os
import shutil
import subprocess
import sys
import zipfile

ROOT, BUILD, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
DIST = os.path.join(WORK, "dist")
VENV = os.path.join(WORK, "venv")

# Nothing from the caller's environment chooses what is tested.
ENV = {k: v for k, v in os.environ.items()
       if k not in ("PYTHONPATH", "PYTHONHOME", "FSL_LIBRARY", "FSLC_STDLIB", "VIRTUAL_ENV")
       and not k.startswith("PIP_")}


def run(*command, **options):
    print("+ " + " ".join(command), flush=True)
    subprocess.run(command, check=True, env=dict(ENV, **options.pop("env", {})), **options)


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)

# pip --isolated: no user configuration (an index, find-links) takes part.
run(sys.executable, "-m", "pip", "--isolated", "wheel", "--no-build-isolation", "--no-deps",
    "--no-index", "--wheel-dir", DIST, os.path.join(ROOT, "python"), env={"FSLC_BUILD_DIR": BUILD})
(wheel,) = glob.glob(os.path.join(DIST, "fslc-*.whl"))
names = zipfile.ZipFile(wheel).namelist()
for expected in ("fslc/__init__.py", "fslc/lib/libfsl.so", "fslc/bin/fslc",
                 "fslc/share/fslc/stdlib/targets/h200.toml", "fslc/share/fslc/stdlib/std/norms.fsl",
                 "fslc/_ops/ext.cpp", "fslc/_ops/build.py", "fslc/_ops/plan.py",
                 "fslc/include/fsl/jit_session.h", "fslc/include/fsl/compiler.h",
                 "fslc/include/fsl/runtime.h"):
    if expected not in names:
        sys.exit("wheel_test: %s lacks %s" % (os.path.basename(wheel), expected))
if not any(n.startswith("fslc/lib/libantlr4-runtime.so") for n in names):
    sys.exit("wheel_test: %s lacks the ANTLR runtime next to libfsl.so" % os.path.basename(wheel))
if not os.path.basename(wheel).endswith("-py3-none-linux_x86_64.whl"):
    sys.exit("wheel_test: %s is not tagged py3-none-linux_x86_64" % os.path.basename(wheel))

run(sys.executable, "-m", "venv", VENV)
python = os.path.join(VENV, "bin", "python")
run(python, "-m", "pip", "--isolated", "install", "--no-index", "--no-deps", wheel)
# From WORK: the current directory is not the source tree, so only the venv's fslc imports.
run(python, os.path.join(ROOT, "tests", "python", "test_capi.py"), "--installed", ROOT,
    os.path.join(WORK, "capi"), cwd=WORK)
# The compiled op path's source and headers, found in the installed package.
run(python, os.path.join(ROOT, "tests", "python", "test_ops_build.py"), "--installed", ROOT,
    os.path.join(WORK, "ops-build"), cwd=WORK)
