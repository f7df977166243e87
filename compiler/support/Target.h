// Target.h — GPU descriptions read from stdlib/targets/*.toml.
//
// Heuristics and the schedule checker size their decisions from these numbers (SMs,
// registers, shared memory, bandwidth). A target is named by its file (`h200`) or by
// one of its `aliases` (`sm_90a`).
#pragma once

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
}

namespace fsl {

class DiagnosticEngine;

/// The target when none is named (--target, fsl.toml, the JIT's program options): the
/// one spelling of the default, read by the driver, the JIT and the launch limits.
constexpr const char *kDefaultTarget = "h200";

/// What a launch may ask of a target: generated launchers check runtime extents against
/// these before launching, the simulator faults on any launch beyond them. The defaults
/// are the H200's.
struct LaunchLimits {
  std::string target = kDefaultTarget;
  std::array<int64_t, 3> maxGridDim = {2147483647, 65535, 65535};
  std::array<int64_t, 3> maxBlockDim = {1024, 1024, 64};
  int64_t maxThreadsPerBlock = 1024;
  int64_t maxClusterSize = 8;
  /// Dynamic plus static shared memory of a block (227 KiB on sm_90).
  int64_t maxSharedBytesPerBlock = 232448;
};

struct Target {
  std::string name;
  std::string description;
  std::string arch; // sm_90a
  std::vector<std::string> aliases;
  int64_t smCount = 0;
  int64_t warpSize = 32;
  int64_t maxThreadsPerBlock = 0;
  int64_t maxThreadsPerSm = 0;
  int64_t registersPerSm = 0;
  int64_t maxRegistersPerThread = 0;
  int64_t sharedMemoryPerBlock = 0;
  int64_t sharedMemoryPerSm = 0;
  int64_t l2Bytes = 0;
  int64_t memoryBytes = 0;
  int64_t memoryBandwidthGBps = 0;
  /// The dense 16-bit (bf16, f16) tensor peak, TFLOP/s: the cost model of `fslc tune`
  /// weighs the tensor pipes' time against the memory's with it. Optional in a target
  /// file; 0 (left out): no estimates, nothing pruned by them.
  int64_t tensorTflops16 = 0;

  /// The registers each thread of a block of `threads` may have: the target's limit a
  /// thread, or where that is fewer the SM's registers shared by the block's warps, as
  /// ptxas allocates them: each of the SM's four sub-partitions holds a quarter of the
  /// registers and of the warps (the most any one holds: 5 of a block of 18), in steps of 8
  /// a thread (64 a thread of 1024; 96 of 576, where an even share would be 112). Past 256
  /// threads a block leaves its threads fewer than the limit.
  int64_t registersPerThreadOfBlock(int64_t threads) const {
    if (registersPerSm <= 0 || threads <= 0)
      return maxRegistersPerThread;
    constexpr int64_t kSubPartitions = 4; // every SM since Volta
    int64_t warps = threads / 32 + (threads % 32 != 0);
    int64_t warpsPerPartition = (warps + kSubPartitions - 1) / kSubPartitions;
    int64_t shared = registersPerSm / kSubPartitions / warpsPerPartition / 32 / 8 * 8;
    return maxRegistersPerThread > 0 ? std::min(maxRegistersPerThread, shared) : shared;
  }
  // Launch limits: the checker refuses static extents beyond them, generated launchers
  // refuse runtime ones (FSL_ERROR_SIZE) and the simulator faults on them. The defaults
  // are CUDA's for every compute capability since 3.0; clusters came with sm_90.
  std::array<int64_t, 3> maxGridDim = {2147483647, 65535, 65535};
  std::array<int64_t, 3> maxBlockDim = {1024, 1024, 64};
  /// Blocks in a thread-block cluster without the non-portable opt-in (1: no clusters).
  int64_t maxClusterSize = 8;

  LaunchLimits launchLimits() const {
    return {name,           maxGridDim,          maxBlockDim, maxThreadsPerBlock,
            maxClusterSize, sharedMemoryPerBlock};
  }
};

/// Parses one target file held in buffer `bufferId`; errors point at its TOML lines.
std::optional<Target> parseTarget(llvm::SourceMgr &sources, unsigned bufferId,
                                  DiagnosticEngine &diagnostics);

/// The `*.toml` files of `directory`, sorted by name.
std::vector<std::string> targetFiles(llvm::StringRef directory);

} // namespace fsl
