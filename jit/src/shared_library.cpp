// libfsl.so (jit/CMakeLists.txt): the C API of fsl/compiler.h, fsl/jit_session.h and
// fsl/jit.h, defined in the static libraries linked in whole. This file only makes sure
// the headers agree with the exported names at compile time.
#include "fsl/compiler.h"
#include "fsl/jit.h"
#include "fsl/jit_session.h"
