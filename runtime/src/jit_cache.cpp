// jit_cache.cpp — the JIT's cache entries: format, verification, atomic writes (POSIX).
#include "jit_cache.h"

#include "sha256.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace fsl::jit_detail {
namespace {

constexpr char kMagic[8] = {'F', 'S', 'L', 'C', 'J', 'I', 'T', '\n'};

void field(std::string &key, const char *tag, const std::string &value) {
  key += tag;
  key += ' ';
  key += std::to_string(value.size());
  key += ' ';
  key += value;
  key += '\n';
}

void putLittle(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += char(uint8_t(value >> (8 * i)));
}

/// Reads `bytes` little-endian bytes at `offset`; false past the end.
bool getLittle(const std::string &in, size_t &offset, int bytes, uint64_t &value) {
  if (in.size() - offset < size_t(bytes))
    return false;
  value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= uint64_t(uint8_t(in[offset + i])) << (8 * i);
  offset += bytes;
  return true;
}

std::string describe(const char *what, const std::string &path, int error) {
  return std::string(what) + " " + path + ": " + std::strerror(error);
}

} // namespace

std::string makeKey(const KeyMaterial &material) {
  std::string key = "fslc-jit-key " + std::to_string(kFormatVersion) + "\n";
  field(key, "runtime", material.runtimeVersion);
  field(key, "nvrtc", material.nvrtcVersion);
  field(key, "arch", material.arch);
  field(key, "name", material.name);
  for (const std::string &option : material.options)
    field(key, "option", option);
  field(key, "device-header-sha256", material.deviceHeaderSha256);
  field(key, "source-sha256", material.sourceSha256);
  return key;
}

std::string reduceName(const std::string &name) {
  std::string reduced;
  for (char c : name) {
    if (reduced.size() == 64)
      break;
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    reduced += keep ? c : '_';
  }
  return reduced.empty() ? "kernel" : reduced;
}

std::string entryFileName(const std::string &name, const std::string &key) {
  return reduceName(name) + "-" + sha256Hex(key) + ".fsljit";
}

std::string encodeEntry(const std::string &key, const std::string &payload) {
  std::string out(kMagic, sizeof kMagic);
  putLittle(out, kFormatVersion, 4);
  putLittle(out, key.size(), 8);
  out += key;
  putLittle(out, payload.size(), 8);
  out += payload;
  Sha256::Digest digest = sha256(out.data(), out.size());
  out.append(reinterpret_cast<const char *>(digest.data()), digest.size());
  return out;
}

bool decodeEntry(const std::string &bytes, const std::string &key, std::string &payload) {
  if (bytes.size() < sizeof kMagic + 4 + 8 + 8 + 32 ||
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return false;
  size_t offset = sizeof kMagic;
  uint64_t version = 0, keySize = 0, payloadSize = 0;
  if (!getLittle(bytes, offset, 4, version) || version != kFormatVersion ||
      !getLittle(bytes, offset, 8, keySize) || keySize != key.size() ||
      bytes.compare(offset, keySize, key) != 0)
    return false;
  offset += keySize;
  if (!getLittle(bytes, offset, 8, payloadSize) || payloadSize == 0 || bytes.size() - offset < 32 ||
      payloadSize != bytes.size() - offset - 32)
    return false;
  Sha256::Digest digest = sha256(bytes.data(), bytes.size() - 32);
  if (std::memcmp(digest.data(), bytes.data() + bytes.size() - 32, 32) != 0)
    return false;
  payload.assign(bytes, offset, payloadSize);
  return true;
}

bool readEntry(const std::string &path, const std::string &key, std::string &payload) {
  // O_NOFOLLOW: a link at the entry's name is a miss (and is replaced by the write).
  // O_NONBLOCK: opening a FIFO planted there returns at once instead of waiting.
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat info;
  bool ok = fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == geteuid() &&
            info.st_size > 0 && uint64_t(info.st_size) <= kMaxEntryBytes;
  std::string bytes;
  if (ok) {
    bytes.resize(size_t(info.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t got = read(fd, bytes.data() + done, bytes.size() - done);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        break;
      done += size_t(got);
    }
    // A file that shrank while read is short; one that grew has bytes past st_size.
    char extra;
    ok = done == bytes.size() && read(fd, &extra, 1) == 0;
  }
  bool hit = ok && decodeEntry(bytes, key, payload);
  // A hit is a use: the eviction removes the least recently used entries first.
  if (hit)
    futimens(fd, nullptr);
  close(fd);
  return hit;
}

bool parseByteCount(const char *text, uint64_t &bytes) {
  if (!text || !*text)
    return false;
  uint64_t value = 0;
  const char *p = text;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (value > (UINT64_MAX - 9) / 10)
      return false;
    value = value * 10 + uint64_t(*p - '0');
  }
  if (p == text)
    return false;
  int shift = 0;
  if (*p == 'K' || *p == 'k')
    shift = 10;
  else if (*p == 'M' || *p == 'm')
    shift = 20;
  else if (*p == 'G' || *p == 'g')
    shift = 30;
  if (shift)
    ++p;
  if (*p != '\0' || (shift && value > (UINT64_MAX >> shift)))
    return false;
  bytes = value << shift;
  return true;
}

unsigned evictToFit(const std::string &directory, uint64_t maxBytes, const std::string &keep) {
  if (maxBytes == 0)
    return 0;
  DIR *dir = opendir(directory.c_str());
  if (!dir)
    return 0;
  struct Entry {
    std::string path;
    uint64_t bytes;
    struct timespec used;
  };
  std::vector<Entry> entries;
  std::vector<std::string> staleTemporaries;
  uint64_t total = 0;
  time_t hourAgo = time(nullptr) - 3600;
  while (struct dirent *item = readdir(dir)) {
    std::string name = item->d_name;
    bool entry = name.size() > 7 && name.compare(name.size() - 7, 7, ".fsljit") == 0;
    bool temporary = name.find(".fsljit.tmp.") != std::string::npos;
    if (!entry && !temporary)
      continue;
    std::string path = directory + "/" + name;
    struct stat info;
    // lstat: a link is neither counted nor removed.
    if (lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != geteuid())
      continue;
    if (temporary) {
      if (info.st_mtime < hourAgo)
        staleTemporaries.push_back(path);
      continue;
    }
    total += uint64_t(info.st_size);
    if (path != keep)
      entries.push_back({path, uint64_t(info.st_size), info.st_mtim});
  }
  closedir(dir);
  unsigned removed = 0;
  for (const std::string &path : staleTemporaries)
    removed += unlink(path.c_str()) == 0;
  if (total <= maxBytes)
    return removed;
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec
                                          : a.used.tv_nsec < b.used.tv_nsec;
  });
  for (const Entry &entry : entries) {
    if (total <= maxBytes)
      break;
    // Gone already (another process evicting) or not: either way it no longer counts.
    if (unlink(entry.path.c_str()) == 0)
      ++removed;
    total -= std::min(total, entry.bytes);
  }
  return removed;
}

std::string temporaryName(const std::string &path, unsigned attempt) {
  return path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(syscall(SYS_gettid)) +
         "." + std::to_string(attempt);
}

bool writeAtomically(const std::string &path, const std::string &bytes, std::string &why) {
  constexpr unsigned kAttempts = 64;
  std::string temporary;
  int fd = -1;
  for (unsigned attempt = 0; attempt < kAttempts && fd < 0; ++attempt) {
    temporary = temporaryName(path, attempt);
    // O_EXCL: never an existing file, and (with O_CREAT) never through a symbolic link,
    // even a dangling one; O_NOFOLLOW says so twice.
    fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) {
      why = describe("cannot create", temporary, errno);
      return false;
    }
  }
  if (fd < 0) {
    why = "cannot create a temporary file for " + path + ": " + std::to_string(kAttempts) +
          " names taken (" + temporary + ")";
    return false;
  }
  auto abandon = [&](const std::string &message) {
    if (fd >= 0)
      close(fd);
    unlink(temporary.c_str());
    why = message;
    return false;
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t wrote = write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote <= 0)
      return abandon(describe("cannot write", temporary, wrote < 0 ? errno : EIO));
    done += size_t(wrote);
  }
  // The data reaches the disk before the name does: after a crash the entry is whole or
  // absent (and a torn one would fail its digest, a miss).
  if (fsync(fd) != 0)
    return abandon(describe("cannot flush", temporary, errno));
  int closed = close(fd);
  fd = -1;
  if (closed != 0)
    return abandon(describe("cannot close", temporary, errno));
  // rename(2) replaces whatever is at `path` (a link itself, not its target) atomically.
  if (rename(temporary.c_str(), path.c_str()) != 0)
    return abandon("cannot rename " + temporary + " to " + path + ": " + std::strerror(errno));
  // The rename itself to disk: best effort (some file systems refuse fsync on directories).
  std::string directory = path.substr(0, path.find_last_of('/') + 1);
  int dir = open(directory.empty() ? "." : directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return true;
}

bool makeDirectories(const std::string &path, std::string &why) {
  auto isDirectory = [](const std::string &name) {
    struct stat info;
    return stat(name.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
  };
  // Each prefix that is not a directory yet is created; an existing one is not touched
  // (mkdir of an existing directory fails with EACCES, not EEXIST, where its parent is
  // not writable), and one made meanwhile by another process is taken.
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    std::string prefix = path.substr(0, end);
    if (!prefix.empty() && !isDirectory(prefix)) {
      if (mkdir(prefix.c_str(), 0755) != 0 && !isDirectory(prefix)) {
        int error = errno == EEXIST ? ENOTDIR : errno;
        why = describe(end == std::string::npos ? "cannot create the cache directory"
                                                : "cannot create the cache directory's parent",
                       prefix, error);
        return false;
      }
    }
    if (end == std::string::npos)
      return true;
  }
}

} // namespace fsl::jit_detail
