// jit_matmul_test.cpp — the specializing JIT's launch plans of matrix products, without a
// GPU: what libfslc's launch metadata says of examples/matmul.fsl and of the split-K,
// stream-K and cluster schedules (tests/lit/matmul/Inputs), and what the plan makes of a
// call: the variant (`when` M and N % 8), each kernel's grid, block, cluster and shared
// memory, each TMA descriptor's sizes, byte strides and box, the workspaces' bytes, and
// the refusals the ahead-of-time launcher makes (misaligned data, rows that are not a
// multiple of 16 bytes), with its messages. Then one session compiles the matmul with
// NVRTC and prepares calls.
// usage: jit_matmul_test SOURCE_DIR WORK_DIR
#include "fsl/compiler.h"
#include "fsl/jit_session.h"

#include "launch_plan.h" // jit/src: the metadata's parser and planner

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "Expect.h"

namespace {

using fsl::jit::LaunchPlan;
using fsl::jit::PlannedCall;
using fsl::jit::PlannedTensorMap;
using fsl_test::expect;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// A product's tensors a [M, K], w [N, K], then `extra` (bias [N]) and y [M, N], bf16,
/// at distinct 4 KiB-aligned fake device addresses (nothing is dereferenced).
struct Product {
  fsl_tensor a{}, w{}, bias{}, y{};
  std::vector<const fsl_tensor *> all;
  Product(int64_t M, int64_t N, int64_t K, bool withBias) {
    uintptr_t next = 0x7f0000000000ull;
    auto place = [&](fsl_tensor &t, int rank, std::array<int64_t, 2> sizes) {
      t.dtype = FSL_BF16;
      t.rank = rank;
      t.sizes[0] = sizes[0];
      t.sizes[1] = sizes[1];
      t.strides[rank - 1] = 1;
      if (rank == 2)
        t.strides[0] = sizes[1];
      t.data = reinterpret_cast<void *>(next);
      next += ((static_cast<uintptr_t>(sizes[0] * (rank == 2 ? sizes[1] : 1) * 2)) + 4095) &
              ~uintptr_t(4095);
    };
    place(a, 2, {M, K});
    place(w, 2, {N, K});
    place(bias, 1, {N, 1});
    place(y, 2, {M, N});
    all = withBias ? std::vector<const fsl_tensor *>{&a, &w, &bias, &y}
                   : std::vector<const fsl_tensor *>{&a, &w, &y};
  }
};

/// The launch metadata of `fusion` of `file` specialized at K (0: K stays runtime).
std::unique_ptr<LaunchPlan> planOf(const std::string &file, const std::string &fusion, int64_t K,
                                   std::string &launch) {
  char error[16384];
  fsl_program *program = nullptr;
  if (fsl_program_load(file.c_str(), nullptr, &program, error, sizeof error) != FSL_OK) {
    expect(false, file + " loads", error);
    return nullptr;
  }
  const char *names[] = {"K"};
  fsl_specialization *s = nullptr;
  fsl_status status = fsl_program_specialize(program, fusion.c_str(), names, &K, K ? 1 : 0, &s,
                                             error, sizeof error);
  expect(status == FSL_OK,
         fusion + " of " + file + " specialized " +
             (K ? "at K = " + std::to_string(K) : "on nothing"),
         error);
  std::unique_ptr<LaunchPlan> plan;
  if (s) {
    launch = fsl_specialization_launch(s);
    std::string why;
    plan = fsl::jit::parseLaunchPlan(launch, why);
    expect(plan != nullptr, "its launch metadata parses", why);
    fsl_specialization_free(s);
  }
  fsl_program_free(program);
  return plan;
}

/// checkCall then planLaunches, as the session does for a call with data.
fsl_status plan(const LaunchPlan &plan, const Product &p, PlannedCall &call, std::string &error,
                bool checkData = true) {
  std::map<std::string, int64_t> dims;
  bool empty = false;
  error.clear();
  fsl_status status = fsl::jit::checkCall(plan, p.all.data(), static_cast<int>(p.all.size()), 0,
                                          checkData, dims, empty, error);
  if (status != FSL_OK)
    return status;
  return fsl::jit::planLaunches(plan, dims, p.all.data(), checkData, call, error);
}

std::string describe(const PlannedTensorMap &m) {
  std::string text = m.map->name + " sizes";
  for (int i = 0; i < m.rank; ++i)
    text += " " + std::to_string(m.sizes[i]);
  text += " strides";
  for (int i = 0; i + 1 < m.rank; ++i)
    text += " " + std::to_string(m.strides[i]);
  text += " box";
  for (int i = 0; i < m.rank; ++i)
    text += " " + std::to_string(m.box[i]);
  return text + " swizzle " + std::to_string(m.map->swizzleBytes);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: jit_matmul_test SOURCE_DIR WORK_DIR\n");
    return 2;
  }
  const std::string root = argv[1], work = argv[2];
  std::system(("rm -rf '" + work + "' && mkdir -p '" + work + "'").c_str());
  const std::string matmul = root + "/examples/matmul.fsl";
  const std::string inputs = root + "/tests/lit/matmul/Inputs/";
  std::string launch, error;

  // --- examples/matmul.fsl at K = 5120: eight variants by M and N % 8 --------------------------
  std::unique_ptr<LaunchPlan> mm = planOf(matmul, "matmul", 5120, launch);
  if (!mm)
    return fsl_test::report("jit matmul");
  expect(mm->pdl && mm->kernels.size() == 8 && mm->variants.size() == 8 &&
             mm->variants[0].guard->text == "(< M 9)" &&
             mm->variants[6].guard->text == "(&& (>= M 512) (== (% N 8) 0))" &&
             mm->workspaces.empty(),
         "matmul: programmatic dependent launch, the launcher's eight variants by M and N % 8");
  // Persistent tiles: a grid below the SMs' 132 CTAs goes without programmatic dependent
  // launch, as the launcher's (LauncherPrinter.cpp); the split-K kernels of the fewest
  // rows are not persistent.
  expect(mm->kernels[0].fullGrid == 0 && mm->kernels[6].fullGrid == 132 &&
             mm->kernels[7].fullGrid == 132,
         "matmul: the persistent kernels' full grid of 132 CTAs");
  expect(fsl::jit::usesProgrammaticLaunch(*mm, mm->kernels[6], 132) &&
             !fsl::jit::usesProgrammaticLaunch(*mm, mm->kernels[6], 96) &&
             fsl::jit::usesProgrammaticLaunch(*mm, mm->kernels[0], 1),
         "matmul: a persistent grid of 96 CTAs launches without PDL, a full one and a split-K "
         "kernel's with it");
  expect(mm->kernels[0].tensorMaps.size() == 2 && mm->kernels[6].tensorMaps.size() == 3 &&
             mm->kernels[7].tensorMaps.size() == 2 && mm->kernels[6].tensorMaps[2].tensor == "y" &&
             mm->kernels[0].args[0].kind == fsl::jit::PlanArg::Kind::TensorMap &&
             mm->kernels[0].args[0].name == "a_map",
         "matmul: tensor maps of a and w, and of y where the output leaves by TMA stores");

  struct Shape {
    int64_t M, N;
    const char *kernel;
    std::array<int64_t, 3> grid;
    int64_t block, shared;
    std::vector<std::string> maps;
  };
  const Shape shapes[] = {
      {1,
       14336,
       "matmul_v0",
       {224, 1, 1},
       256,
       110784,
       // the operands swapped: 64 rows of w by 8 of a a tile
       {"a_map sizes 5120 1 strides 10240 box 64 8 swizzle 128",
        "w_map sizes 5120 14336 strides 10240 box 64 64 swizzle 128"}},
      {100,
       4096,
       "matmul_v4",
       {1 * 32, 1, 1},
       384,
       196688,
       {"a_map sizes 5120 100 strides 10240 box 64 128 swizzle 128",
        "w_map sizes 5120 4096 strides 10240 box 64 128 swizzle 128",
        "y_map sizes 4096 100 strides 8192 box 64 128 swizzle 128"}},
      {100,
       4100,
       "matmul_v5",
       {33, 1, 1},
       384,
       196688,
       {"a_map sizes 5120 100 strides 10240 box 64 128 swizzle 128",
        "w_map sizes 5120 4100 strides 10240 box 64 128 swizzle 128"}},
      {4096,
       14336,
       "matmul_v6",
       {132, 1, 1},
       384,
       213040,
       {"a_map sizes 5120 4096 strides 10240 box 64 128 swizzle 128",
        "w_map sizes 5120 14336 strides 10240 box 64 256 swizzle 128",
        "y_map sizes 14336 4096 strides 28672 box 64 128 swizzle 128"}},
      {4097,
       14343,
       "matmul_v7",
       {132, 1, 1},
       384,
       213040,
       {"a_map sizes 5120 4097 strides 10240 box 64 128 swizzle 128",
        "w_map sizes 5120 14343 strides 10240 box 64 256 swizzle 128"}},
  };
  for (const Shape &shape : shapes) {
    Product p(shape.M, shape.N, 5120, false);
    PlannedCall call;
    fsl_status status = plan(*mm, p, call, error);
    std::string what = "M = " + std::to_string(shape.M) + ", N = " + std::to_string(shape.N);
    bool ok = status == FSL_OK && call.launches.size() == 1 && call.workspaces.empty();
    std::string got = error;
    if (ok) {
      const fsl::jit::PlannedLaunch &l = call.launches[0];
      got = l.kernel->name + " grid " + std::to_string(l.grid[0]) + " " +
            std::to_string(l.grid[1]) + " " + std::to_string(l.grid[2]) + " block " +
            std::to_string(l.block[0]) + " shared " + std::to_string(l.shared);
      ok = l.kernel->name == shape.kernel && l.grid == shape.grid && l.block[0] == shape.block &&
           l.shared == shape.shared && !l.clustered && l.tensorMaps.size() == shape.maps.size();
      for (size_t m = 0; ok && m < shape.maps.size(); ++m) {
        ok = describe(l.tensorMaps[m]) == shape.maps[m] && l.tensorMaps[m].data != nullptr;
        got += "; " + describe(l.tensorMaps[m]);
      }
      ok = ok && l.tensorMaps[0].data == p.a.data && l.tensorMaps[1].data == p.w.data;
    }
    expect(ok,
           what + ": " + shape.kernel +
               " with the launcher's grid, block, shared memory "
               "and tensor maps (sizes and box innermost first, byte strides)",
           got);
  }
  {
    // Refused as the launcher refuses: before anything is launched, naming the tensor.
    Product p(64, 4096, 5120, false);
    p.a.data = static_cast<char *>(p.a.data) + 2;
    PlannedCall call;
    fsl_status status = plan(*mm, p, call, error);
    expect(status == FSL_ERROR_ALIGNMENT &&
               contains(error, "a: data pointer 0x7f0000000002 is not aligned to 16 bytes (TMA "
                               "copies need 16-byte aligned tensors)"),
           "a 2 bytes off 16: FSL_ERROR_ALIGNMENT, as the launcher says it", error);
    status = plan(*mm, p, call, error, /*checkData=*/false);
    expect(status == FSL_OK && call.launches[0].tensorMaps[0].data == nullptr,
           "without the data (prepare with null pointers) the pointer is not looked at", error);
    // A call laid out as a planned one (the session's LastCall) binds its own pointers to
    // the planned tensor maps, refused as planLaunches refuses them.
    status = fsl::jit::bindTensorMaps(*mm, p.all.data(), call, error);
    expect(status == FSL_ERROR_ALIGNMENT &&
               contains(error, "a: data pointer 0x7f0000000002 is not aligned to 16 bytes"),
           "a planned call bound to a 2 bytes off 16: refused", error);
    p.a.data = static_cast<char *>(p.a.data) - 2;
    status = fsl::jit::bindTensorMaps(*mm, p.all.data(), call, error);
    expect(status == FSL_OK && call.launches[0].tensorMaps[0].data == p.a.data &&
               call.launches[0].tensorMaps[1].data == p.w.data,
           "a planned call bound to aligned pointers: the maps take them", error);
    Product q(4096, 14336, 5120, false);
    q.w.data = static_cast<char *>(q.w.data) + 8;
    status = plan(*mm, q, call, error);
    expect(status == FSL_ERROR_ALIGNMENT && contains(error, "w: data pointer") &&
               contains(error, "is not aligned to 16 bytes"),
           "w 8 bytes off 16: refused", error);
  }
  {
    // A static K = 5124 is refused by the compiler (lowering-unsupported, naming a's rows);
    // the kernels for a runtime K meet it at the call: rows of 10248 bytes, which TMA
    // cannot step (the launcher's FSL_ERROR_SIZE).
    char message[16384];
    fsl_program *program = nullptr;
    fsl_program_load(matmul.c_str(), nullptr, &program, message, sizeof message);
    const char *names[] = {"K"};
    const int64_t odd5124[] = {5124};
    fsl_specialization *s = nullptr;
    fsl_status status = program ? fsl_program_specialize(program, "matmul", names, odd5124, 1, &s,
                                                         message, sizeof message)
                                : FSL_ERROR_ARGUMENT;
    expect(status == FSL_ERROR_COMPILE && !s &&
               contains(message, "rows of a are K x bf16 = 10248 bytes apart; TMA needs a "
                                 "multiple of 16 bytes"),
           "K = 5124 static: the compiler refuses it, naming a's rows", message);
    fsl_program_free(program);
    std::unique_ptr<LaunchPlan> odd = planOf(matmul, "matmul", 0, launch);
    Product p(64, 4096, 5124, false);
    PlannedCall call;
    status = odd ? plan(*odd, p, call, error) : FSL_ERROR_ARGUMENT;
    expect(status == FSL_ERROR_SIZE &&
               contains(error, "a: rows of 10248 bytes are not a multiple of 16 bytes (TMA "
                               "copies need 16-byte row strides: pad the contiguous dimension)"),
           "K = 5124 at run time: a's rows of 10248 bytes are refused, naming a", error);
    status = odd ? plan(*odd, p, call, error, /*checkData=*/false) : FSL_ERROR_ARGUMENT;
    expect(status == FSL_ERROR_SIZE && contains(error, "a: rows of 10248 bytes"),
           "... also without the data: the strides come from the sizes", error);
    // The data's checks come first, as in the launcher (fsl_check_data before the
    // variant): a null a is reported as such, not as its rows.
    p.a.data = nullptr;
    status = odd ? plan(*odd, p, call, error) : FSL_ERROR_ARGUMENT;
    expect(status == FSL_ERROR_NULL_POINTER && contains(error, "a: null data pointer"),
           "K = 5124 at run time, a null: the null pointer first", error);
  }
  {
    // y's map (the TMA store) needs N a multiple of 8 elements: the `when N % 8` variants.
    Product p(4096, 14344, 5120, false);
    PlannedCall call;
    fsl_status status = plan(*mm, p, call, error);
    expect(status == FSL_OK && call.launches[0].kernel->name == "matmul_v6" &&
               describe(call.launches[0].tensorMaps[2]) ==
                   "y_map sizes 14344 4096 strides 28688 box 64 128 swizzle 128",
           "N = 14344 (a multiple of 8): y leaves by TMA, its map's rows 28688 bytes", error);
    Product q(4096, 14340, 5120, false);
    status = plan(*mm, q, call, error);
    expect(status == FSL_OK && call.launches[0].kernel->name == "matmul_v7" &&
               call.launches[0].tensorMaps.size() == 2,
           "N = 14340 (N % 8 == 4): matmul_v7, y written without a tensor map", error);
  }

  // --- split_k 3: the counters' zeroing kernel, then the product's; parts and counters
  std::unique_ptr<LaunchPlan> split = planOf(inputs + "split-k.fsl", "linear", 5120, launch);
  if (split) {
    Product p(256, 1024, 5120, true);
    PlannedCall call;
    fsl_status status = plan(*split, p, call, error);
    bool ok = status == FSL_OK && call.launches.size() == 2 && call.workspaces.size() == 2;
    expect(ok && call.launches[0].kernel->name == "linear_v0_zero" &&
               call.launches[0].grid == std::array<int64_t, 3>{1, 1, 1} &&
               call.launches[1].kernel->name == "linear_v0" &&
               call.launches[1].grid == std::array<int64_t, 3>{2, 8, 3} &&
               call.launches[1].tensorMaps.size() == 2,
           "split_k 3 at M = 256, N = 1024: linear_v0_zero on one CTA, then linear_v0 on "
           "2 x 8 x 3 CTAs",
           error);
    expect(ok && call.workspaces[0].workspace->name == "linear_v0_partials" &&
               call.workspaces[0].bytes == 3 * 16 * 128 * 128 * 4 &&
               call.workspaces[1].workspace->name == "linear_v0_arrivals" &&
               call.workspaces[1].bytes == 16 * 4 &&
               split->kernels[0].args.back().kind == fsl::jit::PlanArg::Kind::Workspace &&
               split->kernels[1].args.back().kind == fsl::jit::PlanArg::Kind::Workspace,
           "split_k 3: 3 f32 128 x 128 parts a tile of 16 tiles, and 16 i32 counters",
           ok ? std::to_string(call.workspaces[0].bytes) + " and " +
                    std::to_string(call.workspaces[1].bytes)
              : error);
  }

  // --- stream_k: two slots a CTA and a counter a tile, zeroed by the first kernel -------
  std::unique_ptr<LaunchPlan> streamK = planOf(inputs + "stream-k.fsl", "linear", 5120, launch);
  if (streamK) {
    Product p(4096, 4096, 5120, true);
    PlannedCall call;
    fsl_status status = plan(*streamK, p, call, error);
    expect(status == FSL_OK && call.launches.size() == 2 &&
               call.launches[0].kernel->name == "linear_v0_zero" && call.launches[0].grid[0] == 4 &&
               call.launches[1].kernel->name == "linear_v0" && call.launches[1].grid[0] == 132 &&
               call.workspaces.size() == 2 && call.workspaces[0].bytes == 132 * 2 * 128 * 128 * 4 &&
               call.workspaces[1].bytes == 32 * 32 * 4,
           "stream_k: linear_v0_zero on 4 CTAs (1024 counters), then linear_v0 on 132 CTAs, two "
           "f32 128 x 128 slots a CTA",
           status == FSL_OK && !call.workspaces.empty() ? std::to_string(call.workspaces[0].bytes)
                                                        : error);
  }

  // --- cluster (2, 1) multicast, persistent: the cluster attribute, the occupancy --------
  std::unique_ptr<LaunchPlan> cluster =
      planOf(inputs + "cluster-example.fsl", "linear_bias_gelu", 5120, launch);
  if (cluster) {
    Product p(4096, 14336, 5120, true);
    PlannedCall call;
    fsl_status status = plan(*cluster, p, call, error);
    expect(status == FSL_OK && call.launches.size() == 1 && call.launches[0].clustered &&
               call.launches[0].cluster == std::array<int64_t, 3>{2, 1, 1} &&
               call.launches[0].grid[0] == 132 && call.launches[0].kernel->gridFromOccupancy &&
               call.launches[0].tensorMaps.size() == 3,
           "cluster (2, 1): clusters of 2, a persistent grid of at most 132 CTAs (lowered to "
           "the clusters resident at once when launched)",
           error);
  }

  // --- Metadata the parser refuses, and cluster shapes the plan refuses -------------------
  const std::string head = "fsl-launch 1\nfusion f\nlimits 100 100 100 1024 1024 64 1024 8 "
                           "232448\ndim M runtime\ntensor a bf16 in 0 M M\n";
  struct Bad {
    const char *what, *body, *message;
  };
  const Bad bad[] = {
      {"a swizzle of 16", "kernel k 0\ntensormap a_map a bf16 16 2 M M 64 64\n",
       "a swizzle of 0, 32, 64 or 128"},
      {"a box of 512", "kernel k 0\ntensormap a_map a bf16 128 2 M M 64 512\n",
       "a box size of 1 to 256"},
      {"a map of an unknown tensor", "kernel k 0\ntensormap b_map b bf16 128 2 M M 64 64\n",
       "describes b, no tensor of that name and dtype"},
      {"a map the kernel lacks", "kernel k 0\narg tensormap 0\n", "kernel k has no tensormap 0"},
      {"an unknown workspace", "kernel k 0\narg workspace scratch\n",
       "kernel k takes an undeclared scratch"},
      {"pdl 2", "pdl 2\n", "pdl is 0 or 1"},
      {"a full grid of 0", "kernel k 0\nfullgrid 0\n", "fullgrid takes a CTA count of at least 1"},
  };
  for (const Bad &b : bad) {
    std::string why;
    std::unique_ptr<LaunchPlan> parsed =
        fsl::jit::parseLaunchPlan(head + b.body + "variant always\nend\n", why);
    expect(!parsed && contains(why, b.message), std::string(b.what) + ": refused", why);
  }
  struct BadCluster {
    const char *what, *shape, *message;
  };
  const BadCluster badClusters[] = {
      {"a grid of 5 in clusters of 2", "grid 5 1 1\ncluster 2 1 1\n",
       "k: the grid extent 5 along x is not a multiple of the cluster extent 2"},
      {"clusters of 16", "grid 16 1 1\ncluster 16 1 1\n",
       "k: cluster extent 16 along x (16) is outside 1..8 on h200"},
      {"clusters of 4 x 4", "grid 4 4 1\ncluster 4 4 1\n",
       "k: clusters of 16 blocks; h200 allows at most 8"},
  };
  for (const BadCluster &b : badClusters) {
    std::string why;
    std::unique_ptr<LaunchPlan> parsed = fsl::jit::parseLaunchPlan(
        "fsl-launch 1\nfusion f\ntarget h200 sm_90a\nlimits 100 100 100 1024 1024 64 1024 8 "
        "232448\ndim M runtime\ntensor a bf16 in 0 M\nkernel k 0\narg tensor a\n" +
            std::string(b.shape) + "block 128 1 1\nvariant always 0\nend\n",
        why);
    fsl_tensor a{reinterpret_cast<void *>(0x10000), FSL_BF16, 1, {8}, {1}};
    const fsl_tensor *tensors[] = {&a};
    PlannedCall call;
    fsl_status status = parsed
                            ? fsl::jit::planLaunches(*parsed, {{"M", 8}}, tensors, true, call, why)
                            : FSL_ERROR_ARGUMENT;
    expect(status == FSL_ERROR_SIZE && contains(why, b.message),
           std::string(b.what) + ": FSL_ERROR_SIZE", why);
  }

  // --- A session: NVRTC into the cache, prepare, a memory hit, a refusal -------------------
  char message[16384];
  fsl_program *program = nullptr;
  fsl_status status = fsl_program_load(matmul.c_str(), nullptr, &program, message, sizeof message);
  fsl_jit_session_options options{};
  options.arch = "sm_90a";
  const std::string cache = work + "/cache";
  options.cache_dir = cache.c_str();
  fsl_jit_session *session = nullptr;
  if (status == FSL_OK)
    status = fsl_jit_session_create(program, &options, &session, message, sizeof message);
  expect(status == FSL_OK && session, "a session over examples/matmul.fsl", message);
  if (session) {
    fsl_jit_launch_info info{};
    Product p(1, 14336, 5120, false);
    status = fsl_jit_session_prepare(session, "matmul", p.all.data(), 3, nullptr, 0, &info, message,
                                     sizeof message);
    expect(status == FSL_OK && std::string(info.specialization) == "matmul.K5120.N14336" &&
               !info.memory_hit && info.launch_count == 1 &&
               std::string(info.launches[0].kernel) == "matmul_v0" &&
               info.launches[0].grid[0] == 224 && info.launches[0].tensor_maps == 2 &&
               info.launches[0].cluster[0] == 1 && !info.launches[0].grid_from_occupancy &&
               info.workspace_count == 0,
           "M = 1, N = 14336, K = 5120: specialized on K and N, compiled by NVRTC, matmul_v0 (the "
           "operands swapped: 224 tiles of 64 rows of w) with two tensor maps",
           message);
    Product big(4096, 14336, 5120, false);
    status = fsl_jit_session_prepare(session, "matmul", big.all.data(), 3, nullptr, 0, &info,
                                     message, sizeof message);
    expect(status == FSL_OK && info.memory_hit &&
               std::string(info.launches[0].kernel) == "matmul_v5" &&
               info.launches[0].grid[0] == 132 && info.launches[0].tensor_maps == 3,
           "M = 4096: a memory hit, matmul_v5 on 132 CTAs with three tensor maps", message);
    big.a.data = static_cast<char *>(big.a.data) + 2;
    status = fsl_jit_session_prepare(session, "matmul", big.all.data(), 3, nullptr, 0, &info,
                                     message, sizeof message);
    expect(status == FSL_ERROR_ALIGNMENT && contains(message, "a: data pointer") &&
               contains(message, "TMA copies need 16-byte aligned tensors"),
           "a misaligned: refused by prepare too", message);
    status = fsl_jit_session_launch(session, "matmul", big.all.data(), 3, nullptr, 0, nullptr,
                                    message, sizeof message);
    fsl_jit_stats stats{};
    fsl_jit_session_stats(session, &stats);
    expect(status != FSL_OK && stats.launches == 0 && stats.tensor_maps_encoded == 0,
           "a launch that cannot go launches and encodes nothing", message);
    fsl_jit_session_destroy(session);
  }
  fsl_program_free(program);
  return fsl_test::report("jit matmul");
}
