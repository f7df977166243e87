// jit_session_test.cpp — libfslc (fsl/compiler.h) and the specializing JIT
// (fsl/jit_session.h) without a GPU: NVRTC and the on-disk cache only.
// usage: jit_session_test SOURCE_DIR FSLC WORK_DIR
//
// stdlib/std/norms.fsl is loaded with H left runtime; rms_norm_add is specialized at
// H = 4096 and H = 7168. Each source is exactly what `fslc -D H=...` writes (the static
// schedules), the launch metadata gives the launcher's variants and shapes, both compile
// into the cache (two entries, one each), a repeated call is a memory hit (no file, no
// compile, counted), and calls the launcher would refuse are refused before anything is
// compiled, with its messages.
#include "fsl/compiler.h"
#include "fsl/jit.h"
#include "fsl/jit_session.h"

#include "launch_plan.h"         // jit/src: the metadata's parser
#include "program_specializer.h" // jit/src: the session, with a specializer of the test's

#include <dirent.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "Expect.h"

namespace {

using fsl_test::expect;
using fsl_test::readFile;

std::set<std::string> entries(const std::string &directory) {
  std::set<std::string> names;
  if (DIR *dir = opendir(directory.c_str())) {
    while (dirent *entry = readdir(dir))
      if (entry->d_name[0] != '.')
        names.insert(entry->d_name);
    closedir(dir);
  }
  return names;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// rms_norm_add's tensors: x, residual, weight, y (T x H, H).
struct Call {
  fsl_tensor x{}, residual{}, weight{}, y{};
  const fsl_tensor *all[4] = {&x, &residual, &weight, &y};
  Call(int64_t T, int64_t H, uintptr_t base = 0) {
    for (fsl_tensor *t : {&x, &residual, &y})
      *t = fsl_tensor{nullptr, FSL_BF16, 2, {T, H}, {H, 1}};
    weight = fsl_tensor{nullptr, FSL_BF16, 1, {H}, {1}};
    if (base) { // distinct, aligned fake device addresses (prepare never dereferences)
      uintptr_t step = (static_cast<uintptr_t>(T * H * 2) + 4095) & ~uintptr_t(4095);
      x.data = reinterpret_cast<void *>(base);
      residual.data = reinterpret_cast<void *>(base + step);
      weight.data = reinterpret_cast<void *>(base + 2 * step);
      y.data = reinterpret_cast<void *>(base + 3 * step);
    }
  }
};

/// The block size and shared memory the ahead-of-time launcher gives kernel `name`.
std::pair<int64_t, int64_t> launcherShape(const std::string &source, const std::string &name) {
  std::smatch match;
  std::regex shape(
      "// " + name +
      R"(\n[^]*?const dim3 block\(\(unsigned\)(\d+)[^]*?shared_bytes = \(size_t\)(\d+);)");
  if (!std::regex_search(source, match, shape))
    return {-1, -1};
  return {std::stoll(match[1]), std::stoll(match[2])};
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: jit_session_test SOURCE_DIR FSLC WORK_DIR\n");
    return 2;
  }
  const std::string root = argv[1], fslc = argv[2], work = argv[3];
  const std::string norms = root + "/stdlib/std/norms.fsl";
  const std::string cache = work + "/cache";
  std::system(("rm -rf '" + work + "' && mkdir -p '" + work + "'").c_str());
  char error[16384];

  // --- Loading ----------------------------------------------------------------------------
  fsl_program_options options{};
  options.runtime_dims = "H";
  fsl_program *program = nullptr;
  fsl_status status = fsl_program_load(norms.c_str(), &options, &program, error, sizeof error);
  expect(status == FSL_OK && program, "norms.fsl loads with H runtime", error);
  if (!program)
    return 1;
  expect(fsl_program_fusion_count(program) == 17 &&
             std::string(fsl_program_fusion_name(program, 1)) == "rms_norm_add" &&
             std::string(fsl_program_fusion_name(program, 16)) == "softmax_backward",
         "its seventeen fusions (the forward ones, then the training ones), in order");
  expect(std::string(fsl_program_arch(program)) == "sm_90a", "the target's architecture",
         fsl_program_arch(program));
  std::string signature = fsl_program_signature(program, "rms_norm_add");
  expect(contains(signature, "dim H runtime\n") && contains(signature, "reduced H\n") &&
             contains(signature, "tensor residual bf16 inout 0 T H\n") &&
             contains(signature, "scalar eps f32 9.9999999999999995e-07\n"),
         "the signature: H runtime and reduced, residual inout, eps with its default", signature);
  expect(fsl_program_signature(program, "nope") == nullptr, "no signature of an unknown fusion");

  fsl_program *bad = nullptr;
  options.runtime_dims = "Q";
  status = fsl_program_load(norms.c_str(), &options, &bad, error, sizeof error);
  expect(status == FSL_ERROR_ARGUMENT && !bad && contains(error, "Q is not a static dimension"),
         "runtime_dims naming no static dimension is refused", error);
  options.runtime_dims = "T";
  status = fsl_program_load(norms.c_str(), &options, &bad, error, sizeof error);
  expect(status == FSL_ERROR_ARGUMENT && contains(error, "a runtime size already"),
         "runtime_dims naming a runtime dimension is refused", error);
  status = fsl_program_load_text("broken.fsl", "fusion f(x: f32[N]) -> (y: f32[N]) { y = x + ; }",
                                 nullptr, &bad, error, sizeof error);
  expect(status == FSL_ERROR_COMPILE && !bad && contains(error, "broken.fsl:1:"),
         "a file with errors: FSL_ERROR_COMPILE with fslc's diagnostics", error);
  status = fsl_program_load((work + "/missing.fsl").c_str(), nullptr, &bad, error, sizeof error);
  expect(status == FSL_ERROR_ARGUMENT && contains(error, "cannot read"), "a missing file", error);

  // --- Specializing -------------------------------------------------------------------------
  std::string sources[2], launches[2];
  const int64_t sizes[2] = {4096, 7168};
  for (int i = 0; i < 2; ++i) {
    const char *names[] = {"H"};
    fsl_specialization *s = nullptr;
    status = fsl_program_specialize(program, "rms_norm_add", names, &sizes[i], 1, &s, error,
                                    sizeof error);
    std::string H = std::to_string(sizes[i]);
    expect(status == FSL_OK, "rms_norm_add specialized at H = " + H, error);
    if (!s)
      return 1;
    expect(std::string(fsl_specialization_name(s)) == "rms_norm_add.H" + H, "its name",
           fsl_specialization_name(s));
    sources[i] = fsl_specialization_source(s);
    launches[i] = fsl_specialization_launch(s);
    fsl_specialization_free(s);
    // The same text as fslc's static schedule for that size.
    std::string aot = work + "/aot_" + H;
    int code =
        std::system(("'" + fslc + "' -D H=" + H + " -o '" + aot + "' '" + norms + "'").c_str());
    std::string expected = readFile(aot + "/rms_norm_add.cu");
    expect(code == 0 && !expected.empty() && sources[i] == expected,
           "H = " + H + ": the source is fslc -D H=" + H + "'s rms_norm_add.cu, byte for byte");
    expect(contains(sources[i], "T_i * " + H + " +") && !contains(sources[i], "int64_t H)"),
           "H = " + H + ": H is a constant of the kernels, not a parameter");
    std::string why;
    std::unique_ptr<fsl::jit::LaunchPlan> plan = fsl::jit::parseLaunchPlan(launches[i], why);
    expect(plan && plan->dims.size() == 2 && plan->dims[1].second == sizes[i] &&
               plan->isRuntimeDim("T") && plan->kernels.size() == 2 && plan->variants.size() == 2 &&
               plan->variants[0].guard && plan->variants[0].guard->text == "(< T 132)" &&
               !plan->variants[1].guard,
           "H = " + H + ": its launch metadata: H static, T runtime, the launcher's two variants",
           why.empty() ? launches[i] : why);
    // Each kernel's shape is the launcher's.
    for (size_t k = 0; plan && k < plan->kernels.size(); ++k) {
      const fsl::jit::PlanKernel &kernel = plan->kernels[k];
      auto [block, shared] = launcherShape(expected, kernel.name);
      expect(kernel.block[0].text == std::to_string(block) &&
                 kernel.shared.text == std::to_string(shared) && kernel.grid[0].text == "T" &&
                 kernel.args.size() == 6 &&
                 kernel.args[3].kind == fsl::jit::PlanArg::Kind::Scalar &&
                 kernel.args[5].kind == fsl::jit::PlanArg::Kind::Dim,
             "H = " + H + ": " + kernel.name +
                 " has the launcher's block, shared memory and "
                 "arguments",
             "block " + kernel.block[0].text + ", shared " + kernel.shared.text);
    }
  }
  expect(sources[0] != sources[1], "the two specializations differ");
  {
    // A tuning database: its entry for H = 4096 is that specialization's schedule, as
    // `fslc --tuning-db` takes it; other sizes keep the heuristics'.
    const std::string db = work + "/tuned.fsl", missing = work + "/no-such-db.fsl";
    std::ofstream(db) << "// target: h200\nschedule rms_norm_add when H == 4096 = "
                         "auto(inner_persistent) { vector_width = 4; }\n";
    fsl_program_options tuned{};
    tuned.runtime_dims = "H";
    tuned.tuning_database = db.c_str();
    fsl_program *withDb = nullptr;
    status = fsl_program_load(norms.c_str(), &tuned, &withDb, error, sizeof error);
    expect(status == FSL_OK && withDb, "norms.fsl loads with a tuning database", error);
    std::string dbSources[2];
    for (int i = 0; withDb && i < 2; ++i) {
      const char *names[] = {"H"};
      fsl_specialization *s = nullptr;
      status = fsl_program_specialize(withDb, "rms_norm_add", names, &sizes[i], 1, &s, error,
                                      sizeof error);
      expect(status == FSL_OK && s, "specialized with the database", error);
      if (s)
        dbSources[i] = fsl_specialization_source(s);
      fsl_specialization_free(s);
    }
    std::string aot = work + "/aot_db";
    int code = std::system(
        ("'" + fslc + "' -D H=4096 --tuning-db '" + db + "' -o '" + aot + "' '" + norms + "'")
            .c_str());
    std::string expected = readFile(aot + "/rms_norm_add.cu");
    expect(code == 0 && !expected.empty() && dbSources[0] == expected && dbSources[0] != sources[0],
           "H = 4096: the database's schedule, fslc --tuning-db's source byte for byte, not the "
           "heuristics'");
    expect(dbSources[1] == sources[1], "H = 7168: no entry, the heuristics' source");
    fsl_program_free(withDb);
    tuned.tuning_database = missing.c_str();
    fsl_program *none = nullptr;
    status = fsl_program_load(norms.c_str(), &tuned, &none, error, sizeof error);
    expect(status == FSL_ERROR_ARGUMENT && !none && contains(error, "no-such-db.fsl"),
           "a tuning database that does not read is refused at load", error);
  }
  {
    fsl_specialization *generic = nullptr;
    status = fsl_program_specialize(program, "rms_norm_add", nullptr, nullptr, 0, &generic, error,
                                    sizeof error);
    expect(status == FSL_OK && contains(fsl_specialization_source(generic), "int64_t H)") &&
               contains(fsl_specialization_launch(generic), "dim H runtime"),
           "without values, the kernels take H at run time", error);
    fsl_specialization_free(generic);
  }
  {
    const char *names[] = {"Q"};
    const int64_t values[] = {8};
    fsl_specialization *s = nullptr;
    status = fsl_program_specialize(program, "nope", names, values, 1, &s, error, sizeof error);
    expect(
        status == FSL_ERROR_ARGUMENT && !s &&
            contains(error,
                     "no fusion 'nope' in " + norms +
                         " (fusions: rms_norm, rms_norm_add, layer_norm, softmax, rms_norm_train, "
                         "rms_norm_backward, rms_norm_backward_weight, rms_norm_grad, "
                         "rms_norm_add_train, "
                         "rms_norm_add_backward, rms_norm_add_backward_weight, rms_norm_add_grad, "
                         "layer_norm_train, "
                         "layer_norm_backward, layer_norm_backward_weight, layer_norm_grad, "
                         "softmax_backward)"),
        "an unknown fusion is refused, naming the fusions", error);
    status =
        fsl_program_specialize(program, "rms_norm_add", names, values, 1, &s, error, sizeof error);
    expect(status == FSL_ERROR_ARGUMENT && contains(error, "rms_norm_add has no dimension 'Q'"),
           "an unknown dimension is refused", error);
    const char *h[] = {"H"};
    const int64_t zero[] = {0};
    status = fsl_program_specialize(program, "rms_norm_add", h, zero, 1, &s, error, sizeof error);
    expect(status == FSL_ERROR_ARGUMENT && contains(error, "positive"), "H = 0 is refused", error);
  }
  {
    // Matrix products specialize too: their metadata carries the tensor maps
    // (jit_matmul_test.cpp checks their plans).
    fsl_program *matmul = nullptr;
    status = fsl_program_load((root + "/examples/matmul.fsl").c_str(), nullptr, &matmul, error,
                              sizeof error);
    expect(status == FSL_OK, "examples/matmul.fsl loads", error);
    fsl_specialization *s = nullptr;
    const char *names[] = {"K"};
    const int64_t values[] = {4096};
    if (matmul)
      status = fsl_program_specialize(matmul, fsl_program_fusion_name(matmul, 0), names, values, 1,
                                      &s, error, sizeof error);
    expect(status == FSL_OK && s &&
               contains(fsl_specialization_launch(s), "tensormap a_map a bf16 128 2 M 4096 ") &&
               contains(fsl_specialization_launch(s), "arg tensormap 0\n"),
           "a matmul specializes, its launch metadata with the kernels' TMA tensor maps", error);
    fsl_specialization_free(s);
    fsl_program_free(matmul);
  }

  // --- The session: NVRTC into the cache, the memory cache ------------------------------------
  fsl_jit_session_options sessionOptions{};
  sessionOptions.policy = FSL_SPECIALIZE_REDUCED;
  sessionOptions.arch = "sm_90a";
  sessionOptions.cache_dir = cache.c_str();
  fsl_jit_session *session = nullptr;
  status = fsl_jit_session_create(program, &sessionOptions, &session, error, sizeof error);
  expect(status == FSL_OK && session, "a session (policy: reduced dimensions)", error);
  if (!session)
    return 1;
  fsl_jit_launch_info info{};
  fsl_jit_stats stats{};
  std::string paths[2];
  for (int i = 0; i < 2; ++i) {
    Call call(8, sizes[i], 0x100000000ull);
    std::string H = std::to_string(sizes[i]);
    auto start = std::chrono::steady_clock::now();
    status = fsl_jit_session_prepare(session, "rms_norm_add", call.all, 4, nullptr, 0, &info, error,
                                     sizeof error);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    expect(status == FSL_OK && std::string(info.specialization) == "rms_norm_add.H" + H &&
               !info.memory_hit && !info.disk_hit,
           "T = 8, H = " + H + ": specialized and compiled by NVRTC",
           status == FSL_OK ? std::to_string(static_cast<int>(ms)) + " ms" : error);
    auto [block, shared] = launcherShape(sources[i], "rms_norm_add_v0");
    expect(info.launch_count == 1 && std::string(info.launches[0].kernel) == "rms_norm_add_v0" &&
               info.launches[0].grid[0] == 8 && info.launches[0].grid[1] == 1 &&
               info.launches[0].block[0] == block && info.launches[0].shared_bytes == shared,
           "T = 8, H = " + H + ": rms_norm_add_v0 (T < 132) on 8 blocks of the launcher's size");
    paths[i] = info.cache_path;
    struct stat st {};
    expect(stat(paths[i].c_str(), &st) == 0 && st.st_size > 0 &&
               paths[i].rfind(cache + "/rms_norm_add_H" + H + "-", 0) == 0,
           "H = " + H + ": its cache entry", paths[i]);
    // The entry is this source's: compiling it again reads that file.
    fsl_jit_binary again{};
    status = fsl_jit_compile(sources[i].c_str(), ("rms_norm_add.H" + H).c_str(), "sm_90a", nullptr,
                             0, cache.c_str(), &again, error, sizeof error);
    expect(status == FSL_OK && again.cache_hit == 1 && paths[i] == again.path,
           "H = " + H + ": the entry holds the specialized source's cubin", error);
    fsl_jit_free(&again);
  }
  std::set<std::string> files = entries(cache);
  expect(files.size() == 2, "two cache entries, one per H", std::to_string(files.size()));
  fsl_jit_session_stats(session, &stats);
  expect(stats.specializations == 2 && stats.nvrtc_compiles == 2 && stats.memory_hits == 0,
         "two specializations, two NVRTC compiles");

  // Hits: another T, the same H — no compiler, no NVRTC, no file.
  Call big(2000, 4096, 0x100000000ull);
  status = fsl_jit_session_prepare(session, "rms_norm_add", big.all, 4, nullptr, 0, &info, error,
                                   sizeof error);
  expect(status == FSL_OK && info.memory_hit == 1 &&
             std::string(info.specialization) == "rms_norm_add.H4096" &&
             std::string(info.launches[0].kernel) == "rms_norm_add_v1" &&
             info.launches[0].grid[0] == 2000,
         "T = 2000, H = 4096: a memory hit, launching rms_norm_add_v1 (T >= 132) on 2000 blocks",
         error);
  Call again7168(8, 7168, 0x100000000ull);
  status = fsl_jit_session_prepare(session, "rms_norm_add", again7168.all, 4, nullptr, 0, &info,
                                   error, sizeof error);
  expect(status == FSL_OK && info.memory_hit == 1 && paths[1] == info.cache_path,
         "T = 8, H = 7168 again: a memory hit", error);
  fsl_jit_session_stats(session, &stats);
  expect(stats.memory_hits == 2 && stats.specializations == 2 && stats.nvrtc_compiles == 2 &&
             entries(cache) == files,
         "hits are counted, and add no specialization, compile or file");
  {
    // The host time of a hit (checks, lookup, variant and shapes): the issue's target is
    // under 50 us a call; a hit is far below it, so a slow machine does not fail this.
    const int calls = 20000;
    auto start = std::chrono::steady_clock::now();
    bool allHit = true;
    for (int i = 0; i < calls; ++i) {
      fsl_jit_session_prepare(session, "rms_norm_add", big.all, 4, nullptr, 0, &info, error,
                              sizeof error);
      allHit &= info.memory_hit == 1;
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count() /
                calls;
    char figure[64];
    std::snprintf(figure, sizeof figure, "%.2f us a call", us);
    expect(allHit && us < 50, "a hit costs little host time", figure);
    fsl_jit_session_stats(session, &stats);
    expect(stats.memory_hits == 2 + calls && entries(cache) == files, "every one a memory hit");
  }

  // --- Refused calls: nothing specialized, compiled or written -------------------------------
  struct Refusal {
    const char *what;
    fsl_status status;
    const char *message;
    void (*damage)(Call &);
  };
  const Refusal refusals[] = {
      {"x of rank 1", FSL_ERROR_RANK, "x: rank 1, expected 2", [](Call &c) { c.x.rank = 1; }},
      {"weight in f32", FSL_ERROR_DTYPE, "weight: dtype f32, expected bf16",
       [](Call &c) { c.weight.dtype = FSL_F32; }},
      {"residual with 9 rows, x with 8", FSL_ERROR_SIZE,
       "residual: size 9 of dimension T, expected 8", [](Call &c) { c.residual.sizes[0] = 9; }},
      {"weight of 5120, x of 4096", FSL_ERROR_SIZE,
       "weight: size 5120 of dimension H, expected 4096",
       [](Call &c) { c.weight.sizes[0] = 5120; }},
      {"x transposed", FSL_ERROR_LAYOUT, "x: stride 8 in dimension 1, expected 1",
       [](Call &c) { c.x.strides[0] = 1, c.x.strides[1] = 8; }},
      {"a null descriptor", FSL_ERROR_NULL_POINTER, "y: null tensor descriptor",
       [](Call &c) { c.all[3] = nullptr; }},
      {"x 2 bytes off 16", FSL_ERROR_ALIGNMENT, "is not aligned to 16 bytes",
       [](Call &c) { c.x.data = static_cast<char *>(c.x.data) + 2; }},
      {"y over x", FSL_ERROR_OVERLAP, "y overlaps x in memory",
       [](Call &c) { c.y.data = c.x.data; }},
  };
  for (const Refusal &refusal : refusals) {
    Call call(8, 4096, 0x100000000ull);
    refusal.damage(call);
    status = fsl_jit_session_prepare(session, "rms_norm_add", call.all, 4, nullptr, 0, &info, error,
                                     sizeof error);
    expect(status == refusal.status && contains(error, refusal.message),
           std::string(refusal.what) + ": refused", error);
  }
  // A call laid out as the fusion's last good one skips the signature's checks and the
  // specialization's key (the session's LastCall), never the data's: alignment and overlap
  // are checked on every call, and a good call after them still finds its kernel.
  {
    Call good(8, 4096, 0x100000000ull);
    status = fsl_jit_session_prepare(session, "rms_norm_add", good.all, 4, nullptr, 0, &info, error,
                                     sizeof error);
    expect(status == FSL_OK, "a good call before the repeated layouts", error);
    Call shifted(8, 4096, 0x100000000ull);
    shifted.x.data = static_cast<char *>(shifted.x.data) + 2;
    status = fsl_jit_session_prepare(session, "rms_norm_add", shifted.all, 4, nullptr, 0, &info,
                                     error, sizeof error);
    expect(status == FSL_ERROR_ALIGNMENT && contains(error, "is not aligned to 16 bytes"),
           "the same layout, x 2 bytes off 16: refused", error);
    Call over(8, 4096, 0x100000000ull);
    over.y.data = over.x.data;
    status = fsl_jit_session_prepare(session, "rms_norm_add", over.all, 4, nullptr, 0, &info, error,
                                     sizeof error);
    expect(status == FSL_ERROR_OVERLAP && contains(error, "y overlaps x in memory"),
           "the same layout, y over x: refused", error);
    Call again(8, 4096, 0x200000000ull);
    status = fsl_jit_session_prepare(session, "rms_norm_add", again.all, 4, nullptr, 0, &info,
                                     error, sizeof error);
    expect(status == FSL_OK && info.memory_hit, "the same layout at other addresses: a memory hit",
           error);
    Call wider(8, 7168, 0x100000000ull);
    status = fsl_jit_session_prepare(session, "rms_norm_add", wider.all, 4, nullptr, 0, &info,
                                     error, sizeof error);
    expect(status == FSL_OK && std::string(info.specialization) == "rms_norm_add.H7168",
           "another H after the repeated layout: its own specialization", info.specialization);
  }
  {
    Call call(8, 5120, 0x100000000ull);
    status = fsl_jit_session_prepare(session, "rms_norm_add", call.all, 3, nullptr, 0, &info, error,
                                     sizeof error);
    expect(status == FSL_ERROR_ARGUMENT &&
               contains(error, "rms_norm_add takes 4 tensors (x, residual, weight, y), given 3"),
           "three tensors for four: refused", error);
    double scalars[2] = {1e-5, 1};
    status = fsl_jit_session_prepare(session, "rms_norm_add", call.all, 4, scalars, 2, &info, error,
                                     sizeof error);
    expect(status == FSL_ERROR_ARGUMENT && contains(error, "at most 1 scalars"),
           "two scalars for one: refused", error);
    status = fsl_jit_session_prepare(session, "nope", call.all, 4, nullptr, 0, &info, error,
                                     sizeof error);
    expect(status == FSL_ERROR_ARGUMENT && contains(error, "no fusion 'nope'"),
           "an unknown fusion: refused", error);
    Call empty(0, 5120);
    status = fsl_jit_session_prepare(session, "rms_norm_add", empty.all, 4, nullptr, 0, &info,
                                     error, sizeof error);
    expect(status == FSL_OK && info.launch_count == 0,
           "T = 0: nothing to do, whatever the data pointers (and nothing specialized)", error);
  }
  fsl_jit_session_stats(session, &stats);
  // 11 refusals, and the two of the repeated layout (its good calls specialize nothing new).
  expect(stats.refused == 13 && stats.specializations == 2 && stats.nvrtc_compiles == 2 &&
             entries(cache) == files,
         "refused calls specialize, compile and write nothing",
         "refused " + std::to_string(stats.refused));
  {
    // Without a GPU (or a context) a launch fails with the driver's reason and launches
    // nothing; with one, tests/gpu/specialize_gpu_test.cu checks the results.
    Call call(8, 4096, 0x100000000ull);
    status = fsl_jit_session_launch(session, "rms_norm_add", call.all, 4, nullptr, 0, nullptr,
                                    error, sizeof error);
    fsl_jit_session_stats(session, &stats);
    expect(status != FSL_OK && stats.launches == 0 && error[0],
           "a launch without a GPU fails and says why", error);
  }
  fsl_jit_session_destroy(session);

  {
    // A row's sum over an empty row: refused as the launcher does (it returned FSL_OK and
    // left the sums unwritten); no rows is still nothing to do.
    fsl_program *sums = nullptr;
    status = fsl_program_load_text(
        "row_sum.fsl", "fusion row_sum(x: f32[T, H]) -> (s: f32[T]) { s = sum(x, over H); }",
        nullptr, &sums, error, sizeof error);
    expect(status == FSL_OK, "a row sum loads", error);
    fsl_jit_session *rows = nullptr;
    if (sums)
      fsl_jit_session_create(sums, &sessionOptions, &rows, error, sizeof error);
    fsl_tensor x{nullptr, FSL_F32, 2, {5, 0}, {0, 1}}, out{nullptr, FSL_F32, 1, {5}, {1}};
    const fsl_tensor *both[2] = {&x, &out};
    status = rows ? fsl_jit_session_prepare(rows, "row_sum", both, 2, nullptr, 0, &info, error,
                                            sizeof error)
                  : FSL_ERROR_ARGUMENT;
    expect(status == FSL_ERROR_SIZE &&
               contains(error, "H is 0, but s[T] has elements, which cannot be computed over an "
                               "empty H"),
           "H = 0 with 5 rows: refused, nothing launched", error);
    x.sizes[0] = out.sizes[0] = 0;
    status = rows ? fsl_jit_session_prepare(rows, "row_sum", both, 2, nullptr, 0, &info, error,
                                            sizeof error)
                  : FSL_ERROR_ARGUMENT;
    expect(status == FSL_OK && info.launch_count == 0, "no rows and H = 0: nothing to do", error);
    fsl_jit_session_destroy(rows);
    fsl_program_free(sums);
  }

  {
    // The "reduced" policy's fallback: a specialization that does not compile with the
    // innermost sizes static is made again with the reduced ones alone. A pointwise fusion
    // has none reduced, so the second try has no sizes; the specializer here refuses every
    // specialization that names one (as the compiler refuses a fusion it cannot lower).
    fsl_program *scale = nullptr;
    status = fsl_program_load_text("scale.fsl",
                                   "fusion scale(x: f32[T, H]) -> (y: f32[T, H]) { y = x * 2.0; }",
                                   nullptr, &scale, error, sizeof error);
    expect(status == FSL_OK && scale, "a pointwise fusion loads", error);
    std::vector<std::vector<std::pair<std::string, int64_t>>> asked;
    fsl::jit::Specializer compile = scale ? fsl::jit::programSpecializer(scale) : nullptr;
    fsl::jit::Specializer refuseSizes =
        [&](const std::string &fusion, const std::vector<std::pair<std::string, int64_t>> &dims,
            fsl::jit::Specialized &out, std::string &why) -> fsl_status {
      asked.push_back(dims);
      if (!dims.empty()) {
        why = "refused by the test";
        return FSL_ERROR_COMPILE;
      }
      return compile(fusion, dims, out, why);
    };
    std::unique_ptr<fsl::jit::Session> direct;
    std::string why;
    if (scale)
      status = fsl::jit::Session::create({{"scale", fsl_program_signature(scale, "scale")}},
                                         "sm_90a", refuseSizes, sessionOptions, direct, why);
    fsl_tensor x{reinterpret_cast<void *>(0x100000000ull), FSL_F32, 2, {3, 40}, {40, 1}};
    fsl_tensor y{reinterpret_cast<void *>(0x200000000ull), FSL_F32, 2, {3, 40}, {40, 1}};
    const fsl_tensor *tensors[2] = {&x, &y};
    fsl_jit_launch_info fallback{};
    status = direct ? direct->run("scale", tensors, 2, nullptr, 0, nullptr, /*launch=*/false,
                                  &fallback, why)
                    : FSL_ERROR_ARGUMENT;
    expect(status == FSL_OK && asked.size() == 2 && asked[0].size() == 1 &&
               asked[0][0] == std::make_pair(std::string("H"), int64_t(40)) && asked[1].empty() &&
               std::string(fallback.specialization) == "scale",
           "innermost H refused: specialized again on the reduced dimensions (none)", why);
    direct.reset();
    fsl_program_free(scale);
  }

  // --- A second session: the disk cache, then the other policies ----------------------------
  session = nullptr;
  fsl_jit_session_create(program, &sessionOptions, &session, error, sizeof error);
  Call call(8, 7168, 0x100000000ull);
  status = fsl_jit_session_prepare(session, "rms_norm_add", call.all, 4, nullptr, 0, &info, error,
                                   sizeof error);
  fsl_jit_session_stats(session, &stats);
  expect(status == FSL_OK && !info.memory_hit && info.disk_hit && stats.nvrtc_compiles == 0 &&
             paths[1] == info.cache_path,
         "a new session specializes again and reads the cubin from the disk cache", error);
  fsl_jit_session_destroy(session);

  sessionOptions.policy = FSL_SPECIALIZE_ALL;
  fsl_jit_session_create(program, &sessionOptions, &session, error, sizeof error);
  status = fsl_jit_session_prepare(session, "rms_norm_add", call.all, 4, nullptr, 0, &info, error,
                                   sizeof error);
  expect(status == FSL_OK && std::string(info.specialization) == "rms_norm_add.H7168.T8" &&
             info.launches[0].grid[0] == 8,
         "policy all: T is specialized too", error);
  fsl_jit_session_destroy(session);

  sessionOptions.policy = FSL_SPECIALIZE_NONE;
  fsl_jit_session_create(program, &sessionOptions, &session, error, sizeof error);
  status = fsl_jit_session_prepare(session, "rms_norm_add", call.all, 4, nullptr, 0, &info, error,
                                   sizeof error);
  std::string generic = info.specialization;
  Call other(8, 4096, 0x100000000ull);
  fsl_status second = fsl_jit_session_prepare(session, "rms_norm_add", other.all, 4, nullptr, 0,
                                              &info, error, sizeof error);
  expect(status == FSL_OK && second == FSL_OK && generic == "rms_norm_add" && info.memory_hit,
         "policy none: one kernel for every H (the second H is a memory hit)", error);
  fsl_jit_session_destroy(session);
  fsl_jit_session_options badPolicy{};
  badPolicy.policy = static_cast<fsl_specialize_policy>(7);
  status = fsl_jit_session_create(program, &badPolicy, &session, error, sizeof error);
  expect(status == FSL_ERROR_ARGUMENT && contains(error, "unknown specialization policy"),
         "an unknown policy is refused", error);

  {
    // Scalars are converted to their declared types, refused when they do not fit.
    fsl_program *scaled = nullptr;
    status = fsl_program_load_text(
        "scale.fsl", "fusion scale(x: f32[N], k: i32) -> (y: f32[N]) { y = x * f32(k); }", nullptr,
        &scaled, error, sizeof error);
    expect(status == FSL_OK, "a fusion with an i32 scalar loads", error);
    fsl_jit_session_options plain{};
    plain.arch = "sm_90a";
    plain.cache_dir = cache.c_str();
    if (scaled && fsl_jit_session_create(scaled, &plain, &session, error, sizeof error) == FSL_OK) {
      fsl_tensor x{nullptr, FSL_F32, 1, {64}, {1}}, y = x;
      const fsl_tensor *both[] = {&x, &y};
      double half = 2.5, three = 3;
      status =
          fsl_jit_session_prepare(session, "scale", both, 2, &half, 1, &info, error, sizeof error);
      expect(status == FSL_ERROR_ARGUMENT &&
                 contains(error, "k: 2.5 is not a value of its type i32"),
             "k = 2.5 for an i32: refused", error);
      status = fsl_jit_session_prepare(session, "scale", both, 2, nullptr, 0, &info, error,
                                       sizeof error);
      expect(status == FSL_ERROR_ARGUMENT && contains(error, "scalar k has no default: pass it"),
             "k missing (no default): refused", error);
      status =
          fsl_jit_session_prepare(session, "scale", both, 2, &three, 1, &info, error, sizeof error);
      expect(status == FSL_OK && std::string(info.specialization) == "scale",
             "k = 3: a fusion without reductions is not specialized (policy: reduced)", error);
      fsl_jit_session_destroy(session);
    }
    fsl_program_free(scaled);
  }

  // --- A strided input -----------------------------------------------------------------------
  // std/qk_norm.fsl's x is a view of qkv: [T, 3 * NH * D] (q = qkv.view(T, 3, NH, D)[:, 0]): the
  // metadata marks it strided, its kernel takes both outer strides, and a call is checked
  // as the launcher checks it (innermost stride 1, outer ones positive multiples of the
  // 8-element vectors) and passes the descriptor's strides.
  {
    fsl_program *qk = nullptr;
    status = fsl_program_load((root + "/stdlib/std/qk_norm.fsl").c_str(), nullptr, &qk, error,
                              sizeof error);
    expect(status == FSL_OK && qk, "std/qk_norm.fsl loads", error);
    fsl_specialization *s = nullptr;
    if (qk) {
      status = fsl_program_specialize(qk, "qk_norm", nullptr, nullptr, 0, &s, error, sizeof error);
      fsl_program_free(qk);
    }
    expect(status == FSL_OK && s, "qk_norm specializes (NH = 32, D = 128)", error);
    std::string launch = s ? fsl_specialization_launch(s) : "";
    if (s)
      fsl_specialization_free(s);
    std::string why;
    std::unique_ptr<fsl::jit::LaunchPlan> plan = fsl::jit::parseLaunchPlan(launch, why);
    expect(plan && contains(launch, "tensor x bf16 in 16 strided T NH D\n") &&
               contains(launch, "arg stride x 0\narg stride x 1\n") && plan->tensors[0].strided &&
               !plan->tensors[1].strided,
           "qk_norm's metadata: x strided, its kernel takes x's two outer strides",
           why.empty() ? launch : why);
    if (plan) {
      const int64_t T = 7, NH = 32, D = 128;
      fsl_tensor x{reinterpret_cast<void *>(uintptr_t(1) << 32),
                   FSL_BF16,
                   3,
                   {T, NH, D},
                   {3 * NH * D, D, 1}};
      fsl_tensor weight{reinterpret_cast<void *>((uintptr_t(1) << 32) + (uintptr_t(1) << 24)),
                        FSL_BF16,
                        1,
                        {D},
                        {1}};
      fsl_tensor y{reinterpret_cast<void *>((uintptr_t(1) << 32) + (uintptr_t(1) << 25)),
                   FSL_BF16,
                   3,
                   {T, NH, D},
                   {NH * D, D, 1}};
      const fsl_tensor *all[] = {&x, &weight, &y};
      std::map<std::string, int64_t> dims;
      bool empty = false;
      auto check = [&](std::string &message) {
        return fsl::jit::checkCall(*plan, all, 3, 0, true, dims, empty, message);
      };
      std::string message;
      status = check(message);
      fsl::jit::PlannedCall call;
      fsl_status planned =
          status == FSL_OK ? fsl::jit::planLaunches(*plan, dims, all, true, call, message) : status;
      expect(status == FSL_OK && planned == FSL_OK && dims["T"] == T && call.launches.size() == 1,
             "the view q of qkv is accepted and planned", message);
      x.strides[2] = 2;
      status = check(message);
      expect(status == FSL_ERROR_LAYOUT &&
                 message == "x: stride 2 in dimension 2, expected 1 (a strided tensor's innermost "
                            "dimension is contiguous)",
             "an innermost stride of 2 is refused", message);
      x.strides[2] = 1;
      x.strides[1] = 132;
      status = check(message);
      expect(status == FSL_ERROR_ALIGNMENT &&
                 message == "x: stride 132 in dimension 1 is not a multiple of 8 elements (the "
                            "kernel reads 16-byte vectors of each row)",
             "a head stride of 132 elements is refused (rows the vectors cannot start on)",
             message);
      x.strides[1] = 0;
      status = check(message);
      expect(status == FSL_ERROR_LAYOUT &&
                 message == "x: stride 0 in dimension 1, expected a positive stride",
             "a zero stride is refused", message);
      x.strides[1] = D;
      x.strides[0] = int64_t(1) << 61;
      status = check(message);
      expect(status == FSL_ERROR_SIZE && contains(message, "x: stride 2305843009213693952 in "
                                                           "dimension 0 makes more than 2^63 - 1"),
             "strides reaching past 2^63 bytes are refused", message);
      x.strides[0] = 3 * NH * D;
      x.sizes[0] = 1; // a dimension of size 1: its stride is never used
      x.strides[0] = -5;
      y.sizes[0] = 1;
      status = check(message);
      expect(status == FSL_OK, "the stride of a dimension of size 1 is not checked", message);
      x.sizes[0] = y.sizes[0] = T;
      x.strides[0] = 3 * NH * D;
      weight.strides[0] = 2;
      status = check(message);
      expect(status == FSL_ERROR_LAYOUT &&
                 message == "weight: stride 2 in dimension 0, expected 1 (contiguous row-major)",
             "a parameter that is not strided stays contiguous", message);
      weight.strides[0] = 1;
      // y placed between q's rows: within x's reach, an overlap.
      y.data = reinterpret_cast<void *>((uintptr_t(1) << 32) + 2 * NH * D * 2);
      status = check(message);
      expect(status == FSL_ERROR_OVERLAP && contains(message, "y overlaps x"),
             "an output within the reach of a strided input overlaps it", message);
    }
  }

  fsl_program_free(program);
  return fsl_test::report("jit session");
}
