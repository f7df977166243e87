# lit configuration for fslc's golden and -verify tests.
#
#   %fslc    the built compiler
#   %python  the Python interpreter CMake found
#   %repo    the repository root
# FileCheck, not and count come from LLVM 19's tools directory.
import os
import shutil

import lit.formats

config.name = "fslc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".fsl", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.lit_exec_root

config.substitutions.append(("%fslc", config.fslc))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%repo", config.repo_root))
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", "")])
# Diagnostics must not depend on the terminal.
config.environment.pop("TERM", None)
# Tests that drive a real build with fslc's depfiles.
if shutil.which("ninja"):
    config.available_features.add("ninja")
