// jit_session_api.cpp — fsl/jit_session.h: a Session whose specializations come from
// libfslc (fsl_program_specialize).
#include "fsl/jit_session.h"

#include "program_specializer.h"
#include "session.h"

#include <cstdio>

struct fsl_jit_session {
  std::unique_ptr<fsl::jit::Session> session;
};

namespace {

fsl_status report(fsl_status status, const std::string &message, char *error, size_t size) {
  if (error && size)
    std::snprintf(error, size, "%s", status == FSL_OK ? "" : message.c_str());
  return status;
}

} // namespace

namespace fsl::jit {

Specializer programSpecializer(const fsl_program *program) {
  return
      [program](const std::string &fusion, const std::vector<std::pair<std::string, int64_t>> &dims,
                fsl::jit::Specialized &out, std::string &why) {
        std::vector<const char *> names;
        std::vector<int64_t> values;
        for (const auto &[name, value] : dims) {
          names.push_back(name.c_str());
          values.push_back(value);
        }
        fsl_specialization *specialization = nullptr;
        std::vector<char> message(16384);
        fsl_status status = fsl_program_specialize(program, fusion.c_str(), names.data(),
                                                   values.data(), static_cast<int>(names.size()),
                                                   &specialization, message.data(), message.size());
        if (status != FSL_OK) {
          why = message.data();
          return status;
        }
        out.name = fsl_specialization_name(specialization);
        out.source = fsl_specialization_source(specialization);
        out.launch = fsl_specialization_launch(specialization);
        fsl_specialization_free(specialization);
        return FSL_OK;
      };
}

} // namespace fsl::jit

extern "C" fsl_status fsl_jit_session_create(const fsl_program *program,
                                             const fsl_jit_session_options *options,
                                             fsl_jit_session **session, char *error,
                                             size_t error_size) {
  if (!program || !session)
    return report(FSL_ERROR_NULL_POINTER, "program and session are required", error, error_size);
  *session = nullptr;
  std::map<std::string, std::string> signatures;
  for (int i = 0; i < fsl_program_fusion_count(program); ++i) {
    const char *name = fsl_program_fusion_name(program, i);
    signatures[name] = fsl_program_signature(program, name);
  }
  fsl::jit::Specializer specializer = fsl::jit::programSpecializer(program);
  fsl_jit_session_options defaults{};
  auto created = std::make_unique<fsl_jit_session>();
  std::string why;
  fsl_status status =
      fsl::jit::Session::create(signatures, fsl_program_arch(program), std::move(specializer),
                                options ? *options : defaults, created->session, why);
  if (status == FSL_OK)
    *session = created.release();
  return report(status, why, error, error_size);
}

extern "C" void fsl_jit_session_destroy(fsl_jit_session *session) { delete session; }

extern "C" fsl_status fsl_jit_session_launch(fsl_jit_session *session, const char *fusion,
                                             const fsl_tensor *const *tensors, int tensor_count,
                                             const double *scalars, int scalar_count,
                                             cudaStream_t stream, char *error, size_t error_size) {
  if (!session || !fusion)
    return report(FSL_ERROR_NULL_POINTER, "session and fusion are required", error, error_size);
  std::string why;
  fsl_status status =
      session->session->run(fusion, tensors, tensor_count, scalars, scalar_count,
                            static_cast<void *>(stream), /*launch=*/true, nullptr, why);
  return report(status, why, error, error_size);
}

extern "C" fsl_status fsl_jit_session_prepare(fsl_jit_session *session, const char *fusion,
                                              const fsl_tensor *const *tensors, int tensor_count,
                                              const double *scalars, int scalar_count,
                                              fsl_jit_launch_info *info, char *error,
                                              size_t error_size) {
  if (!session || !fusion)
    return report(FSL_ERROR_NULL_POINTER, "session and fusion are required", error, error_size);
  std::string why;
  fsl_status status = session->session->run(fusion, tensors, tensor_count, scalars, scalar_count,
                                            nullptr, /*launch=*/false, info, why);
  return report(status, why, error, error_size);
}

extern "C" void fsl_jit_session_stats(const fsl_jit_session *session, fsl_jit_stats *stats) {
  if (!stats)
    return;
  *stats = session ? session->session->stats() : fsl_jit_stats{};
}
