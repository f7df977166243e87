// libfsl.so through the package's fslc::fsl: the compiler as a library (fsl/compiler.h)
// loads and checks a program that imports the installed stdlib, with no GPU; the
// specializing JIT's functions (fsl/jit_session.h) and the JIT's (fsl/jit.h) link.
#include "fsl/compiler.h"
#include "fsl/jit.h"
#include "fsl/jit_session.h"

#include <cstdio>
#include <cstring>

int main() {
  fsl_program_options options{};
  options.stdlib_dir = FSL_INSTALLED_STDLIB; // the package's FSLC_STDLIB_DIR
  const char *text = "import \"std/norms.fsl\";\n"
                     "fusion twice(x: f32[N]) -> (y: f32[N]) {\n"
                     "    y = x * 2.0;\n"
                     "}\n";
  fsl_program *program = nullptr;
  char error[4096] = "";
  fsl_status status =
      fsl_program_load_text("twice.fsl", text, &options, &program, error, sizeof error);
  if (status != FSL_OK) {
    std::printf("FAIL fsl_program_load_text: status %d: %s\n", status, error);
    return 1;
  }
  bool ok = fsl_program_fusion_count(program) == 1 &&
            std::strcmp(fsl_program_fusion_name(program, 0), "twice") == 0 &&
            std::strcmp(fsl_program_target(program), "h200") == 0;
  std::printf("%s libfsl: fusion %s for %s\n", ok ? "ok  " : "FAIL",
              fsl_program_fusion_name(program, 0), fsl_program_target(program));
  fsl_program_free(program);
  // Linked, not called (they need a GPU): the symbols resolve in libfsl.so.
  void (*destroySession)(fsl_jit_session *) = &fsl_jit_session_destroy;
  void (*freeBinary)(fsl_jit_binary *) = &fsl_jit_free;
  return ok && destroySession && freeBinary ? 0 : 1;
}
