# FslcAddLibrary.cmake — fusions compiled by fslc at build time into a static library,
# in the manner of Halide's add_halide_library.
#
#   fsl_add_library(<target>
#                   SOURCES <file.fsl>...        the inputs given to fslc
#                   FUSIONS <fusion>...          the fusions they define, one library member each
#                   [NAME <prefix>]              fslc --prefix: files <prefix><fusion>.cu/.h,
#                                                launcher <prefix><fusion>(), kernels <prefix><fusion>_v<i>
#                   [DEFINES <NAME=VALUE>...]    fslc -D, static dimension values
#                   [TARGET <gpu>]               fslc --target (default h200); sets CUDA_ARCHITECTURES
#                   [INCLUDE_DIRS <dir>...]      fslc -I, import directories
#                   [JIT])                       refused: not implemented (see below)
#
# At build time a custom command runs fslc --emit=cuda on SOURCES into
# <current binary dir>/<target>.fslc/, writing a depfile so that Ninja and Makefiles
# regenerate when any imported .fsl file changes, not only SOURCES, and a stamp file so
# that neither reruns it when nothing changed (below). <target> is then a
# CUDA static library of the generated <prefix><fusion>.cu files, for the architecture
# of TARGET (h200, h100-sxm: 90a; a100: 80, read from the stdlib's target files as fslc
# reads them), linking fslc::runtime and with the output directory as a PUBLIC include
# directory: `#include "<prefix><fusion>.h"` and call `<prefix><fusion>(...)`.
#
# FUSIONS is required: the build system must know the generated files before fslc runs,
# and fslc writes one .cu/.h pair per fusion of SOURCES. A listed fusion that fslc did
# not generate is a build error naming it; an unlisted one is generated and left out.
# Without NAME, fslc's default names are kept (<fusion>.cu, fsl_<fusion>()): two
# libraries of the same fusion in one program (two values of H) need distinct NAMEs.
#
# The consumer enables CUDA itself (project(... LANGUAGES CXX CUDA) or
# enable_language(CUDA), which CMake allows only at file scope) and finds the package:
#
#   find_package(fslc 0.1 REQUIRED)
#   fsl_add_library(norms_4096 SOURCES norms.fsl FUSIONS rms_norm_add NAME h4096_ DEFINES H=4096)
#   target_link_libraries(app PRIVATE norms_4096)
#
# JIT (keeping the generated source for fsl_jit_compile at run time, with no nvcc) is
# not implemented and is refused rather than ignored; run fslc --emit=cuda and
# fsl/jit.h's fsl_jit_compile directly (docs/runtime.md).
#
# Run as a script (cmake -P), this file checks that fslc wrote every expected output:
# the custom command's second step.
if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE AND DEFINED FSL_EXPECTED_OUTPUTS)
  foreach(output IN LISTS FSL_EXPECTED_OUTPUTS)
    if(NOT EXISTS "${output}")
      cmake_path(GET output STEM fusion)
      message(FATAL_ERROR "fsl_add_library(${FSL_LIBRARY}): fslc generated no ${output}: "
                          "is '${fusion}' (NAME prefix included) a fusion of the SOURCES? "
                          "Check the FUSIONS list.")
    endif()
  endforeach()
  return()
endif()

include_guard(GLOBAL)
# The function below runs with the policies in effect where it is defined: those of
# CMake 3.25 (CMP0116: depfile paths relative to the current binary directory), whatever
# the consumer's cmake_minimum_required says.
cmake_policy(PUSH)
cmake_policy(VERSION 3.25)

# The CUDA architecture (CUDA_ARCHITECTURES spelling, "90a") of fslc target `gpu`, found
# as fslc finds it: a file <stdlib>/targets/<gpu>.toml, or the file that lists `gpu`
# among its aliases; its `arch = "sm_XX"` gives XX.
# fslcConfig.cmake sets FSLC_STDLIB_DIR; loaded from the source tree (by the fslc project
# itself, or a project that adds it as a subdirectory), the module sits next to stdlib/.
function(_fsl_cuda_architecture library gpu out)
  set(stdlib "${FSLC_STDLIB_DIR}")
  if(NOT stdlib)
    cmake_path(GET CMAKE_CURRENT_FUNCTION_LIST_DIR PARENT_PATH stdlib)
    cmake_path(APPEND stdlib stdlib)
  endif()
  if(NOT IS_DIRECTORY "${stdlib}/targets")
    message(FATAL_ERROR "fsl_add_library(${library}): no target files in '${stdlib}/targets': "
                        "load the module through find_package(fslc), or set FSLC_STDLIB_DIR")
  endif()
  file(GLOB target_files "${stdlib}/targets/*.toml")
  set(known "")
  foreach(file IN LISTS target_files)
    cmake_path(GET file STEM name)
    file(STRINGS "${file}" arch_line REGEX "^arch *= *\"sm_[0-9]+[a-z]?\"")
    file(STRINGS "${file}" aliases_line REGEX "^aliases *=")
    string(REGEX MATCHALL "\"[^\"]+\"" aliases "${aliases_line}")
    string(REPLACE "\"" "" aliases "${aliases}")
    list(APPEND known ${name} ${aliases})
    if(gpu STREQUAL name OR gpu IN_LIST aliases)
      string(REGEX REPLACE "^arch *= *\"sm_([0-9]+[a-z]?)\".*" "\\1" arch "${arch_line}")
      if(NOT arch MATCHES "^[0-9]+[a-z]?$")
        message(FATAL_ERROR "fsl_add_library(${library}): ${file} has no arch = \"sm_XX\"")
      endif()
      set(${out} ${arch} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  list(JOIN known ", " known)
  message(FATAL_ERROR "fsl_add_library(${library}): unknown TARGET '${gpu}' (known: ${known})")
endfunction()

function(fsl_add_library target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "JIT" "NAME;TARGET" "SOURCES;FUSIONS;DEFINES;INCLUDE_DIRS")
  set(where "fsl_add_library(${target})")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(ARG_JIT)
    message(FATAL_ERROR "${where}: JIT is not implemented. For run-time compilation, "
                        "generate the source with fslc --emit=cuda and compile it with "
                        "fsl_jit_compile (fsl/jit.h, docs/runtime.md).")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "${where}: SOURCES <file.fsl>... is required")
  endif()
  if(NOT ARG_FUSIONS)
    message(FATAL_ERROR "${where}: FUSIONS <fusion>... is required: the fusions of SOURCES "
                        "to compile (fslc writes <NAME><fusion>.cu for each)")
  endif()
  if(NOT TARGET fslc::fslc OR NOT TARGET fslc::runtime)
    message(FATAL_ERROR "${where}: the targets fslc::fslc and fslc::runtime are missing: "
                        "call find_package(fslc) first")
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CUDA" IN_LIST languages)
    message(FATAL_ERROR "${where}: the library is CUDA: enable the language first "
                        "(project(... LANGUAGES CXX CUDA) or enable_language(CUDA))")
  endif()
  if(NOT DEFINED ARG_TARGET)
    set(ARG_TARGET h200)
  endif()
  _fsl_cuda_architecture(${target} ${ARG_TARGET} architecture)

  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.fslc")
  set(depfile "${out_dir}/${target}.d")
  set(stamp "${out_dir}/${target}.stamp")
  set(sources "")
  foreach(source IN LISTS ARG_SOURCES)
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    list(APPEND sources "${source}")
  endforeach()
  set(flags --emit=cuda -o "${out_dir}" --target=${ARG_TARGET} "--depfile=${depfile}")
  if(DEFINED ARG_NAME)
    list(APPEND flags "--prefix=${ARG_NAME}")
  endif()
  foreach(define IN LISTS ARG_DEFINES)
    list(APPEND flags -D "${define}")
  endforeach()
  foreach(dir IN LISTS ARG_INCLUDE_DIRS)
    cmake_path(ABSOLUTE_PATH dir BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE)
    list(APPEND flags -I "${dir}")
  endforeach()

  set(cu_files "")
  set(headers "")
  foreach(fusion IN LISTS ARG_FUSIONS)
    list(APPEND cu_files "${out_dir}/${ARG_NAME}${fusion}.cu")
    list(APPEND headers "${out_dir}/${ARG_NAME}${fusion}.h")
  endforeach()
  # The command's output is a stamp file, touched when fslc succeeds; the generated files
  # are its byproducts. fslc rewrites a file only when its contents change, so after a
  # touch of a source that changes nothing they keep their old times: as outputs, Make
  # would find them older than the source at every build and rerun fslc forever (Ninja
  # rechecks them, restat). The stamp is always new, and unchanged byproducts recompile
  # nothing under either generator. The depfile's rule names the stamp alone (-MT): Ninja
  # requires its target to be the command's first output, whereas fslc's default lists
  # every file it wrote, including the fusions left out of FUSIONS.
  list(APPEND flags -MT "${stamp}")

  # fslc names in its depfile every .fsl file it read and the target file; DEPENDS adds
  # the sources and the compiler itself, so a new fslc regenerates too.
  add_custom_command(
    OUTPUT "${stamp}"
    BYPRODUCTS ${cu_files} ${headers}
    COMMAND fslc::fslc ${flags} ${sources}
    COMMAND "${CMAKE_COMMAND}" "-DFSL_LIBRARY=${target}"
            "-DFSL_EXPECTED_OUTPUTS=${cu_files};${headers}"
            -P "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS ${sources} fslc::fslc
    DEPFILE "${depfile}"
    COMMENT "fslc: generating ${target} (${ARG_FUSIONS}) for ${ARG_TARGET}"
    VERBATIM)

  # The stamp is a source (not compiled): building the library runs the command first.
  add_library(${target} STATIC ${cu_files} ${headers} "${stamp}")
  target_include_directories(${target} PUBLIC "${out_dir}")
  target_link_libraries(${target} PUBLIC fslc::runtime)
  # The generated code is C++17 CUDA (tests/tools/cuda_checks.sh builds it the same way).
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES ${architecture}
                                             CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
endfunction()

cmake_policy(POP)
