/* fsl/compiler.h — libfslc: the compiler as a library, for programs that specialize
 * fusions at run time (the specializing JIT, fsl/jit_session.h).
 *
 * fsl_program_load reads a .fsl file (or fsl_program_load_text takes its text) once and
 * checks it: parse, sema, schedules. fsl_program_specialize then compiles one fusion in
 * memory with some dimensions made static: a runtime dimension given a value becomes a
 * static one, as if it were declared `<H = 7168>`, so the heuristics choose the static
 * schedule for that value and the kernels hold it as a constant. Nothing is written to
 * disk. The result is the generated CUDA source (kernels and launcher, the same text
 * `fslc -D H=7168 --emit=cuda` writes for a fusion declared `<H = ...>`) and the launch
 * metadata: each kernel's name, arguments, grid, block, cluster and dynamic shared
 * memory as expressions over the remaining runtime dimensions, the `when` guards of
 * the variants, the tensors' types, dimensions and alignment, and the target's limits
 * (the format is in jit/src/launch_plan.h). The JIT evaluates it to check a call and
 * launch the kernels exactly as the generated launcher would.
 *
 * Links the compiler (LLVM Support, ANTLR); the runtime (fsl/runtime.h, fsl/jit.h)
 * does not. Errors come back as a status and a message (fslc's diagnostics, as text).
 */
#ifndef FSL_COMPILER_H
#define FSL_COMPILER_H

#include "fsl/runtime.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fsl_program fsl_program;
typedef struct fsl_specialization fsl_specialization;

typedef struct fsl_program_options {
  /* Static dimensions left runtime sizes, comma-separated ("H" or "H,S"): their
   * `<H = 4096>` declarations are ignored, in memory. NULL or "": none. */
  const char *runtime_dims;
  /* A target of the stdlib (`fslc --print-targets`); NULL: "h200". */
  const char *target;
  /* Where `import "std/..."` and the target files are; NULL: $FSLC_STDLIB, else the
   * source tree's stdlib this library was built from. */
  const char *stdlib_dir;
  /* A tuning database (docs/tuning.md: `fslc --tuning-db`) that `= auto` consults before
   * the heuristics, at each specialization's sizes; NULL: fsl.toml's `tuning_database`,
   * if any; "": none at all. A file that does not read, or an entry the heuristics cannot
   * take, is FSL_ERROR_ARGUMENT or FSL_ERROR_COMPILE at load. (Appended to the struct: a
   * caller built against the earlier three-field struct must be rebuilt.) */
  const char *tuning_database;
} fsl_program_options;

/* Reads and checks `path`. FSL_ERROR_COMPILE with the diagnostics in `error` when the
 * file has errors or cannot be read. `options` may be NULL. */
fsl_status fsl_program_load(const char *path, const fsl_program_options *options,
                            fsl_program **program, char *error, size_t error_size);

/* The same from a text; `name` names it in diagnostics and the generated sources, and
 * imports are found relative to its directory. */
fsl_status fsl_program_load_text(const char *name, const char *text,
                                 const fsl_program_options *options, fsl_program **program,
                                 char *error, size_t error_size);

void fsl_program_free(fsl_program *program);

/* The fusions of the main file, in declaration order. */
int fsl_program_fusion_count(const fsl_program *program);
const char *fsl_program_fusion_name(const fsl_program *program, int index);

/* The target's architecture ("sm_90a") and name ("h200"). */
const char *fsl_program_arch(const fsl_program *program);
const char *fsl_program_target(const fsl_program *program);

/* A fusion's signature as launch metadata without kernels: its dimensions (static or
 * runtime), the dimensions its reductions reduce, its tensors and scalars. NULL for an
 * unknown fusion. Owned by the program. */
const char *fsl_program_signature(const fsl_program *program, const char *fusion);

/* Compiles `fusion` with the dimensions `dim_names[i]` static at `dim_values[i]` (> 0).
 * Each name must be a dimension of the fusion (FSL_ERROR_ARGUMENT otherwise, as for an
 * unknown fusion); a static one takes the value as with -D. FSL_ERROR_COMPILE with the
 * diagnostics when the specialized fusion does not compile (a schedule the checker
 * refuses at that size, say), or when its kernels need what the JIT cannot launch yet. */
fsl_status fsl_program_specialize(const fsl_program *program, const char *fusion,
                                  const char *const *dim_names, const int64_t *dim_values,
                                  int dim_count, fsl_specialization **specialization, char *error,
                                  size_t error_size);

/* The generated CUDA (kernels and launcher; NVRTC skips the launcher). */
const char *fsl_specialization_source(const fsl_specialization *specialization);
/* The launch metadata (jit/src/launch_plan.h). */
const char *fsl_specialization_launch(const fsl_specialization *specialization);
/* A name for the specialization: the fusion and its static values, "rms_norm_add.H7168". */
const char *fsl_specialization_name(const fsl_specialization *specialization);
void fsl_specialization_free(fsl_specialization *specialization);

#ifdef __cplusplus
}
#endif

#endif /* FSL_COMPILER_H */
