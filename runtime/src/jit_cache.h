// jit_cache.h — the JIT's on-disk cache entries; internal to the runtime.
//
// An entry is one file, <name>-<SHA-256 of the key>.fsljit in the cache directory:
//
//   "FSLCJIT\n"               magic, 8 bytes
//   u32 format version        little-endian (kFormatVersion)
//   u64 key size, key         the complete key text (makeKey), compared on load
//   u64 payload size, payload the cubin
//   32 bytes                  SHA-256 of everything before it
//
// Readers open only the final name, which a writer fills by rename(2) from an exclusively
// created temporary file: they see a whole entry or none. Anything else at that name (no
// regular file, another owner, a wrong magic, version, key, size or digest) is a miss.
#ifndef FSL_RUNTIME_JIT_CACHE_H
#define FSL_RUNTIME_JIT_CACHE_H

#include <cstdint>
#include <string>
#include <vector>

namespace fsl::jit_detail {

constexpr uint32_t kFormatVersion = 1;
/// Entries larger than this are not read (a cubin is a few MB).
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

struct KeyMaterial {
  std::string runtimeVersion; // this runtime's (fslc's) version
  std::string nvrtcVersion;   // "major.minor"
  std::string arch;
  std::string name;                 // the program name given to NVRTC, as given
  std::vector<std::string> options; // every option NVRTC gets, in order
  std::string deviceHeaderSha256;   // fsl/device.cuh, which the sources include
  std::string sourceSha256;
};

/// The key as text, each field length-prefixed (an option containing a newline cannot
/// pose as two).
std::string makeKey(const KeyMaterial &material);

/// `name` reduced to [A-Za-z0-9_] (others become '_'), at most 64 characters, "kernel"
/// when empty: the readable part of a file name, never a path.
std::string reduceName(const std::string &name);

/// The entry's file name (no directory): reduceName(name) + "-" + SHA-256(key) + ".fsljit".
std::string entryFileName(const std::string &name, const std::string &key);

/// The serialized entry.
std::string encodeEntry(const std::string &key, const std::string &payload);

/// The payload of `bytes` if they are a valid entry for `key`.
bool decodeEntry(const std::string &bytes, const std::string &key, std::string &payload);

/// Reads the entry at `path` for `key`: true and the payload on a hit. Symbolic links are
/// not followed; FIFOs and devices are not opened for reading; only regular files owned
/// by the effective user are read.
bool readEntry(const std::string &path, const std::string &key, std::string &payload);

/// The temporary name of the `attempt`th try to write `path` from this thread:
/// "<path>.tmp.<pid>.<tid>.<attempt>". Unique among live threads of all processes; it is
/// created with O_CREAT|O_EXCL|O_NOFOLLOW, so anything already there (a stale file, a
/// planted link) is skipped, never opened.
std::string temporaryName(const std::string &path, unsigned attempt);

/// Writes `bytes` to `path` atomically: an exclusively created temporary file in the same
/// directory, every write checked, fsync, close, rename over `path`. On failure, `why`
/// says what failed and no file is left behind (neither the temporary nor a partial
/// `path`).
bool writeAtomically(const std::string &path, const std::string &bytes, std::string &why);

/// The default bound on a cache directory's entries (FSL_CACHE_MAX_BYTES overrides it).
constexpr uint64_t kDefaultCacheBytes = uint64_t(1) << 30;

/// Parses FSL_CACHE_MAX_BYTES's value: a decimal byte count (0: no bound), with an
/// optional K, M or G suffix (powers of 1024). False for anything else.
bool parseByteCount(const char *text, uint64_t &bytes);

/// Keeps the entries of `directory` within `maxBytes` (0: no bound): when their sizes add
/// up to more, removes the least recently used (oldest modification time: a hit refreshes
/// it) until they fit, never `keep` (the entry just written). Only this user's regular
/// `*.fsljit` files count and go, and temporary files left by a writer that died more than
/// an hour ago. Another process may be removing the same files: a missing file is no
/// error, and a reader that opened an entry keeps reading it (unlink semantics). Returns
/// how many files it removed.
unsigned evictToFit(const std::string &directory, uint64_t maxBytes, const std::string &keep);

/// Creates `path` and its parents (mode 0755 before the umask); `why` on failure.
bool makeDirectories(const std::string &path, std::string &why);

} // namespace fsl::jit_detail

#endif // FSL_RUNTIME_JIT_CACHE_H
