// fsl_specialize — one specialization of a fusion, written to files, through libfslc.
//
//   fsl_specialize [--runtime-dims=H,...] FILE.fsl FUSION OUT_DIR [DIM=VALUE ...]
//
// writes OUT_DIR/<fusion>.signature (the fusion's launch metadata without kernels) and
// OUT_DIR/<name>.cu and OUT_DIR/<name>.launch, <name> being the specialization's name
// ("rms_norm_add.H7168"). A program without the compiler loads them into the JIT's
// session core (jit/src/session.h), as tests/gpu/specialize_gpu_test.cu does.
#include "fsl/compiler.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

bool write(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "fsl_specialize: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::string runtimeDims;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--runtime-dims=", 15) == 0)
      runtimeDims = argv[i] + 15;
    else
      positional.push_back(argv[i]);
  }
  if (positional.size() < 3) {
    std::fprintf(stderr, "usage: fsl_specialize [--runtime-dims=H,...] FILE.fsl FUSION OUT_DIR "
                         "[DIM=VALUE ...]\n");
    return 2;
  }
  const std::string &file = positional[0], &fusion = positional[1], &out = positional[2];
  std::vector<std::string> names;
  std::vector<int64_t> values;
  for (size_t i = 3; i < positional.size(); ++i) {
    size_t equals = positional[i].find('=');
    char *end = nullptr;
    long long value = equals == std::string::npos
                          ? 0
                          : std::strtoll(positional[i].c_str() + equals + 1, &end, 10);
    if (equals == std::string::npos || equals == 0 || !end || *end || value <= 0) {
      std::fprintf(stderr, "fsl_specialize: '%s' is not DIM=VALUE with VALUE > 0\n",
                   positional[i].c_str());
      return 2;
    }
    names.push_back(positional[i].substr(0, equals));
    values.push_back(value);
  }
  std::vector<const char *> pointers;
  for (const std::string &name : names)
    pointers.push_back(name.c_str());
  fsl_program_options options{};
  options.runtime_dims = runtimeDims.c_str();
  fsl_program *program = nullptr;
  std::vector<char> error(65536);
  if (fsl_program_load(file.c_str(), &options, &program, error.data(), error.size()) != FSL_OK) {
    std::fprintf(stderr, "fsl_specialize: %s\n", error.data());
    return 1;
  }
  const char *signature = fsl_program_signature(program, fusion.c_str());
  fsl_specialization *specialization = nullptr;
  if (!signature || fsl_program_specialize(program, fusion.c_str(), pointers.data(), values.data(),
                                           static_cast<int>(names.size()), &specialization,
                                           error.data(), error.size()) != FSL_OK) {
    std::fprintf(stderr, "fsl_specialize: %s\n",
                 signature ? error.data() : ("no fusion " + fusion).c_str());
    fsl_program_free(program);
    return 1;
  }
  std::string name = fsl_specialization_name(specialization);
  bool ok = write(out + "/" + fusion + ".signature", signature) &&
            write(out + "/" + name + ".cu", fsl_specialization_source(specialization)) &&
            write(out + "/" + name + ".launch", fsl_specialization_launch(specialization));
  if (ok)
    std::printf("%s/%s.cu, .launch\n", out.c_str(), name.c_str());
  fsl_specialization_free(specialization);
  fsl_program_free(program);
  return ok ? 0 : 1;
}
