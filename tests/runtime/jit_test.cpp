// jit_test.cpp — the runtime's NVRTC compile and on-disk cache, without a GPU.
// usage: jit_test GENERATED.cu CACHE_DIR
//        jit_test --child compile|unwritable|file-size CACHE_DIR ID  (run by the tests below)
//
// Besides compile and hit: SHA-256 against FIPS 180-4's vectors; corrupt, truncated,
// foreign and wrong-key entries are misses and are rewritten; links planted at the entry
// or the temporary name are not followed; kernel names never make paths; a cache that
// cannot be written gives FSL_ERROR_CACHE and leaves nothing; several threads and
// several processes compiling one key leave one valid entry.
#include "fsl/jit.h"

#include "jit_cache.h" // runtime/src: the entry format and temporary names
#include "sha256.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "Expect.h"

extern char **environ;

namespace {
namespace jit = fsl::jit_detail;

using fsl_test::expect;
using fsl_test::readFile;

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool exists(const std::string &path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0;
}
bool isLink(const std::string &path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode);
}
bool isRegular(const std::string &path) {
  struct stat info;
  return lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::set<std::string> listDirectory(const std::string &path) {
  std::set<std::string> names;
  if (DIR *dir = opendir(path.c_str())) {
    while (dirent *entry = readdir(dir))
      if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
        names.insert(entry->d_name);
    closedir(dir);
  }
  return names;
}

std::string join(const std::set<std::string> &names) {
  std::string text;
  for (const std::string &name : names)
    text += (text.empty() ? "" : " ") + name;
  return text;
}

std::string directoryOf(const std::string &path) { return path.substr(0, path.rfind('/')); }
std::string baseName(const std::string &path) { return path.substr(path.rfind('/') + 1); }

/// A small kernel, a different source (and so a different key) for each id.
std::string tinySource(const std::string &id) {
  return "// " + id + "\nextern \"C\" __global__ void tiny(float *p) { p[threadIdx.x] = 2.0f; }\n";
}

struct Result {
  fsl_status status = FSL_OK;
  std::string bytes, path, error;
  bool hit = false;
};

Result compile(const std::string &source, const char *name, const std::string &directory,
               const char *const *options = nullptr, int count = 0) {
  fsl_jit_binary binary{};
  char error[4096] = "";
  Result result;
  result.status = fsl_jit_compile(source.c_str(), name, "sm_90a", options, count, directory.c_str(),
                                  &binary, error, sizeof error);
  if (binary.data)
    result.bytes.assign(binary.data, binary.size);
  result.path = binary.path;
  result.hit = binary.cache_hit;
  result.error = error;
  fsl_jit_free(&binary);
  return result;
}

/// Runs this program as `jit_test --child MODE DIRECTORY ID`; its exit status.
int runChild(const char *mode, const std::string &directory, const std::string &id) {
  std::vector<std::string> args = {"/proc/self/exe", "--child", mode, directory, id};
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0)
    return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// --- SHA-256 ------------------------------------------------------------------------

void testSha256() {
  auto hash = [](const std::string &text) { return jit::sha256Hex(text); };
  // FIPS 180-4 / NIST's examples.
  expect(hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
         "sha256 of the empty string");
  expect(hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
         "sha256 of abc");
  expect(hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
         "sha256 of the 448-bit message");
  expect(hash("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklm"
              "nopqrlmnopqrsmnopqrstnopqrstu") ==
             "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
         "sha256 of the 896-bit message");
  jit::Sha256 million;
  std::string thousand(1000, 'a');
  for (int i = 0; i < 1000; ++i)
    million.update(thousand);
  expect(jit::hex(million.final()) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
         "sha256 of a million 'a's, in pieces");
  // The padding's edges (one or two final blocks): bytes (7i + 3) mod 251, digests from
  // Python's hashlib.
  const std::pair<size_t, const char *> edges[] = {
      {1, "084fed08b978af4d7d196a7446a86b58009e636b611db16211b65a9aadff29c5"},
      {55, "1deace58c745f3ecadde68a5923f494c3703fa73f0306483ccb898a5826e8d70"},
      {56, "06dbe23685750e4d3881ded95047abaf93fa8f9c5d3501dc57c717a72ff1398e"},
      {63, "47fb38b12335c9298d09280515c0666489a189d1554bb0ac1a0740806ce9d8b6"},
      {64, "dfa798724b1a8014994f363e5da7474ed26ce3757fb29e07aa47ad5a9352d37b"},
      {65, "dd2eab5a5507d7717c63ce953d9ac61752c21e664425ad1227054722a0d97f69"},
      {119, "c6e0f435df5d7d265baacca31e0602c00aa22fa6d3819aed664649294c743756"},
      {120, "17eb8960823a644bde3065620bb9d45931fe8993fd8eb692a17aff0fd725db6a"},
      {127, "2409a159329f4e770a7d8128130497abb1de01ffb6ad389d97d89ebbeeb7f02c"},
      {128, "3a9c1e22e20578eebe442238f431befd688bd56698eb7c77d95d3f97d8f58207"},
      {1000, "a9425c416f534025a4e2422bd14adba4ec3d4a68d10c3329be8df612964d2b6e"}};
  for (auto [size, digest] : edges) {
    std::string data;
    for (size_t i = 0; i < size; ++i)
      data += char((i * 7 + 3) % 251);
    // Also fed one byte at a time: the same digest.
    jit::Sha256 bytewise;
    for (char c : data)
      bytewise.update(&c, 1);
    expect(hash(data) == digest && jit::hex(bytewise.final()) == digest,
           "sha256 of " + std::to_string(size) + " bytes, whole and byte by byte");
  }
}

// --- The cache --------------------------------------------------------------------------

void testBasics(const std::string &source, const std::string &cache) {
  Result first = compile(source, "softmax.cu", cache);
  expect(first.status == FSL_OK && !first.bytes.empty() && !first.hit,
         "first compile misses the cache", first.error);
  Result second = compile(source, "softmax.cu", cache);
  expect(second.status == FSL_OK && second.hit, "second compile reads the cache", second.path);
  expect(first.bytes == second.bytes, "the cached cubin is the compiled one");
  expect(first.bytes.compare(0, 4,
                             "\x7f"
                             "ELF") == 0,
         "the cubin is an ELF file");
  // The file: <name reduced>-<SHA-256>.fsljit in the directory, a header with the key.
  expect(directoryOf(first.path) == cache &&
             std::regex_match(baseName(first.path), std::regex("softmax_cu-[0-9a-f]{64}\\.fsljit")),
         "the entry is named by the key's SHA-256", first.path);
  std::string entry = readFile(first.path);
  expect(
      entry.compare(0, 8, "FSLCJIT\n") == 0 && entry.find("arch 6 sm_90a\n") != std::string::npos &&
          entry.find("name 10 softmax.cu\n") != std::string::npos &&
          entry.find("option 10 -std=c++17\n") != std::string::npos &&
          entry.find("source-sha256 64 " + jit::sha256Hex(source)) != std::string::npos &&
          entry.find("nvrtc ") != std::string::npos && entry.find("runtime ") != std::string::npos,
      "the entry holds the magic and the whole key");
  const char *options[] = {"-DFSL_TEST_VARIANT=1"};
  Result other = compile(source, "softmax.cu", cache, options, 1);
  expect(other.status == FSL_OK && !other.hit && other.path != first.path,
         "other options are another cache entry");
  Result renamed = compile(source, "softmax2.cu", cache);
  expect(renamed.status == FSL_OK && !renamed.hit && renamed.path != first.path,
         "another program name is another cache entry");

  std::string bad = source + "\n__global__ void broken() { undeclared_name = 1; }\n";
  Result broken = compile(bad, "broken.cu", cache);
  expect(broken.status == FSL_ERROR_COMPILE &&
             broken.error.find("undeclared_name") != std::string::npos,
         "a compile error returns NVRTC's log");
  fsl_jit_binary binary{};
  char error[256] = "";
  fsl_status status = fsl_jit_compile(nullptr, "x.cu", "sm_90a", nullptr, 0, cache.c_str(), &binary,
                                      error, sizeof error);
  expect(status == FSL_ERROR_NULL_POINTER, "a null source is refused", error);
  status = fsl_jit_compile(source.c_str(), "x.cu", "sm_90a", nullptr, 2, cache.c_str(), &binary,
                           error, sizeof error);
  expect(status == FSL_ERROR_NULL_POINTER, "options null with a count is refused", error);
  // Refused before the driver is looked for (there is none here).
  void *module = nullptr;
  status = fsl_jit_function(nullptr, "tiny", &module, error, sizeof error);
  expect(status == FSL_ERROR_NULL_POINTER, "fsl_jit_function without a module is refused", error);
  status = fsl_jit_load(nullptr, &module, error, sizeof error);
  expect(status == FSL_ERROR_NULL_POINTER, "fsl_jit_load without a binary is refused", error);
  Result virtualArch;
  {
    fsl_jit_binary ptxOnly{};
    char message[1024] = "";
    virtualArch.status =
        fsl_jit_compile(tinySource("virtual").c_str(), "v.cu", "compute_90a", nullptr, 0,
                        cache.c_str(), &ptxOnly, message, sizeof message);
    virtualArch.error = message;
    expect(virtualArch.status == FSL_ERROR_COMPILE && !ptxOnly.data &&
               virtualArch.error.find("no cubin") != std::string::npos,
           "a virtual architecture (no cubin) is an error, not an empty entry", virtualArch.error);
  }
}

void testCorruptEntries(const std::string &cache) {
  const std::string directory = cache + "/corrupt";
  const std::string source = tinySource("corrupt");
  Result good = compile(source, "tiny.cu", directory);
  expect(good.status == FSL_OK && !good.hit, "corrupt: the first compile", good.error);
  const std::string valid = readFile(good.path);
  Result foreign = compile(tinySource("foreign"), "tiny.cu", directory);
  const std::string foreignEntry = readFile(foreign.path);

  std::string flippedPayload = valid;
  flippedPayload[valid.size() - 40] ^= 1; // in the cubin, before the digest
  std::string flippedKey = valid;
  size_t arch = valid.find("arch 6 sm_90a");
  flippedKey[arch + 12] = 'b'; // "sm_90b"
  std::string wrongVersion = valid;
  wrongVersion[8] = 2;
  std::string longer = valid + "x";
  const std::pair<const char *, std::string> corruptions[] = {
      {"garbage", "this is not a cubin"},
      {"an empty file", ""},
      {"a bare cubin (the old format)", good.bytes},
      {"a truncated entry (one byte short)", valid.substr(0, valid.size() - 1)},
      {"a truncated entry (half)", valid.substr(0, valid.size() / 2)},
      {"the header alone", valid.substr(0, 20)},
      {"an entry with a byte past its end", longer},
      {"a flipped cubin byte", flippedPayload},
      {"a flipped key byte", flippedKey},
      {"another format version", wrongVersion},
      {"a valid entry of another key", foreignEntry}};
  for (const auto &[what, bytes] : corruptions) {
    writeFile(good.path, bytes);
    Result again = compile(source, "tiny.cu", directory);
    bool rewritten = readFile(good.path) == valid;
    Result after = compile(source, "tiny.cu", directory);
    expect(again.status == FSL_OK && !again.hit && again.bytes == good.bytes && rewritten &&
               after.hit && after.bytes == good.bytes,
           std::string("corrupt: ") + what + " is a miss, and is rewritten", again.error);
  }

  // A FIFO at the entry's name: not opened for reading (that would wait for a writer).
  unlink(good.path.c_str());
  mkfifo(good.path.c_str(), 0644);
  Result fifo = compile(source, "tiny.cu", directory);
  expect(fifo.status == FSL_OK && !fifo.hit && isRegular(good.path) && readFile(good.path) == valid,
         "corrupt: a FIFO at the entry's name is a miss, and is replaced", fifo.error);

  // An entry another user owns is not trusted (anyone may write into a shared /tmp).
  if (geteuid() == 0) {
    bool chowned = chown(good.path.c_str(), 65534, 65534) == 0;
    Result owned = compile(source, "tiny.cu", directory);
    struct stat info;
    stat(good.path.c_str(), &info);
    expect(chowned && owned.status == FSL_OK && !owned.hit && info.st_uid == 0,
           "corrupt: an entry of another owner is a miss, and is replaced", owned.error);
  } else {
    std::printf("skip another owner's entry (needs root to chown)\n");
  }
  expect(listDirectory(directory).size() == 2, "corrupt: no temporary file is left",
         join(listDirectory(directory)));
}

void testLinks(const std::string &cache) {
  const std::string directory = cache + "/links";
  const std::string source = tinySource("links");
  Result good = compile(source, "tiny.cu", directory);
  const std::string valid = readFile(good.path);

  // A link at the entry's name to a valid entry: a link is never read, and the write
  // replaces the link, not its target.
  const std::string victim = cache + "/links-victim";
  writeFile(victim, valid);
  unlink(good.path.c_str());
  symlink(victim.c_str(), good.path.c_str());
  Result linked = compile(source, "tiny.cu", directory);
  expect(linked.status == FSL_OK && !linked.hit && linked.bytes == good.bytes,
         "links: a link at the entry's name is a miss", linked.error);
  expect(readFile(victim) == valid && isRegular(good.path) && readFile(good.path) == valid,
         "links: the link is replaced by an entry, its target untouched");

  // Links at the temporary names this thread tries first: one to a file, one dangling.
  // O_CREAT would write through the first and create the second's target; O_EXCL skips both.
  const std::string target = cache + "/links-target";
  const std::string dangling = cache + "/links-created-through-a-link";
  writeFile(target, "precious");
  unlink(good.path.c_str());
  std::string first = jit::temporaryName(good.path, 0), second = jit::temporaryName(good.path, 1);
  symlink(target.c_str(), first.c_str());
  symlink(dangling.c_str(), second.c_str());
  Result temporary = compile(source, "tiny.cu", directory);
  expect(temporary.status == FSL_OK && !temporary.hit && temporary.bytes == good.bytes &&
             readFile(good.path) == valid,
         "links: links at the temporary names are skipped", temporary.error);
  expect(readFile(target) == "precious" && !exists(dangling) && isLink(first) && isLink(second),
         "links: neither link is followed nor removed");
  expect(listDirectory(directory) ==
             std::set<std::string>{baseName(good.path), baseName(first), baseName(second)},
         "links: no temporary file is left", join(listDirectory(directory)));
}

void testNames(const std::string &cache) {
  const std::string directory = cache + "/names/inner";
  const std::string source = tinySource("names");
  const std::regex entryName("[A-Za-z0-9_]{1,64}-[0-9a-f]{64}\\.fsljit");
  const std::string longName(300, 'n');
  for (const char *name : {"../x", "a/b", "/etc/passwd", "..", "", longName.c_str()}) {
    std::string label = std::string("names: '") + (std::strlen(name) > 20 ? "n x 300" : name) + "'";
    Result first = compile(source, name, directory);
    Result second = compile(source, name, directory);
    expect(first.status == FSL_OK && !first.hit && second.status == FSL_OK && second.hit &&
               second.bytes == first.bytes,
           label + " compiles and is cached", first.error);
    expect(directoryOf(first.path) == directory &&
               std::regex_match(baseName(first.path), entryName),
           label + " is an entry inside the cache directory", first.path);
  }
  expect(listDirectory(cache + "/names") == std::set<std::string>{"inner"} &&
             listDirectory(directory).size() == 6,
         "names: nothing is written outside the cache directory",
         join(listDirectory(cache + "/names")));
  Result slash = compile(source, "a/b", directory), underscore = compile(source, "a_b", directory);
  expect(slash.path != underscore.path, "names: 'a/b' and 'a_b' are different entries");
}

void testUnwritable(const std::string &cache) {
  const std::string source = tinySource("unwritable");
  // The cache directory is a file, or below one.
  const std::string file = cache + "/a-file";
  writeFile(file, "not a directory");
  for (const std::string &directory : {file, file + "/sub"}) {
    Result result = compile(source, "tiny.cu", directory);
    expect(result.status == FSL_ERROR_CACHE && result.bytes.empty() &&
               result.error.find(directory.substr(0, file.size())) != std::string::npos &&
               result.error.find("Not a directory") != std::string::npos &&
               result.error.find("FSL_CACHE_DIR") != std::string::npos,
           "unwritable: a cache directory that is a file gives FSL_ERROR_CACHE", result.error);
  }
  expect(readFile(file) == "not a directory", "unwritable: the file is untouched");

  // A directory this user cannot write (root runs the child as nobody). It is made in
  // /tmp, which nobody can reach, not in the build tree, whose folders may be 0750.
  char locked[] = "/tmp/fsl-jit-test-XXXXXX";
  if (mkdtemp(locked) && chmod(locked, 0755) == 0) {
    expect(runChild("unwritable", locked, "unwritable") == 0,
           "unwritable: a read-only cache directory gives FSL_ERROR_CACHE, naming it");
    expect(listDirectory(locked).empty(), "unwritable: nothing is written",
           join(listDirectory(locked)));
    rmdir(locked);
  } else {
    expect(false, "unwritable: cannot make a directory in /tmp");
  }

  // A write that fails half way (the file-size limit: EFBIG): no entry, no temporary.
  const std::string full = cache + "/full";
  expect(runChild("file-size", full, "file-size") == 0,
         "unwritable: a failed write gives FSL_ERROR_CACHE");
  expect(listDirectory(full).empty(), "unwritable: a failed write leaves no file",
         join(listDirectory(full)));
  Result later = compile(tinySource("file-size"), "tiny.cu", full);
  expect(later.status == FSL_OK && !later.hit, "unwritable: the next compile writes the entry");
}

void testConcurrency(const std::string &cache) {
  // Threads, released together, all compiling one key into an empty directory.
  const std::string directory = cache + "/threads";
  const std::string source = tinySource("threads");
  constexpr int kThreads = 6;
  std::vector<Result> results(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (ready < kThreads) {
      }
      results[i] = compile(source, "tiny.cu", directory);
    });
  for (std::thread &thread : threads)
    thread.join();
  bool same = true;
  for (const Result &result : results)
    same = same && result.status == FSL_OK && result.bytes == results[0].bytes &&
           result.path == results[0].path;
  std::set<std::string> files = listDirectory(directory);
  Result after = compile(source, "tiny.cu", directory);
  expect(same && !results[0].bytes.empty(), "threads: every compile returns the same cubin");
  expect(files.size() == 1 && after.hit && after.bytes == results[0].bytes,
         "threads: one valid entry and no temporary file", join(files));

  // Processes (this program, --child compile), started together.
  const std::string shared = cache + "/processes";
  constexpr int kProcesses = 4;
  std::vector<std::thread> spawners;
  std::atomic<int> succeeded{0};
  for (int i = 0; i < kProcesses; ++i)
    spawners.emplace_back([&] {
      if (runChild("compile", shared, "processes") == 0)
        ++succeeded;
    });
  for (std::thread &spawner : spawners)
    spawner.join();
  files = listDirectory(shared);
  Result mine = compile(tinySource("processes"), "tiny.cu", shared);
  expect(succeeded == kProcesses, "processes: every compile succeeds");
  expect(files.size() == 1 && mine.hit && !mine.bytes.empty(),
         "processes: one valid entry and no temporary file", join(files));
}

int child(const std::string &mode, const std::string &directory, const std::string &id) {
  std::string source = tinySource(id);
  if (mode == "compile") {
    Result result = compile(source, "tiny.cu", directory);
    if (result.status != FSL_OK || result.bytes.compare(0, 4,
                                                        "\x7f"
                                                        "ELF") != 0) {
      std::fprintf(stderr, "child compile: %s\n", result.error.c_str());
      return 1;
    }
    return 0;
  }
  if (mode == "unwritable") {
    if (geteuid() == 0) {
      // Root writes anywhere: be nobody instead.
      if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
        return 3;
    } else {
      chmod(directory.c_str(), 0555);
    }
    Result result = compile(source, "tiny.cu", directory);
    std::printf("     (child) %s\n", result.error.c_str());
    bool ok = result.status == FSL_ERROR_CACHE && result.bytes.empty() &&
              result.error.find(directory) != std::string::npos &&
              result.error.find("Permission denied") != std::string::npos;
    if (geteuid() != 0)
      chmod(directory.c_str(), 0755);
    return ok ? 0 : 1;
  }
  if (mode == "file-size") {
    signal(SIGXFSZ, SIG_IGN); // write() fails with EFBIG instead
    rlimit limit{1024, 1024};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0)
      return 3;
    Result result = compile(source, "tiny.cu", directory);
    std::printf("     (child) %s\n", result.error.c_str());
    return result.status == FSL_ERROR_CACHE && result.bytes.empty() &&
                   result.error.find("cannot write") != std::string::npos &&
                   result.error.find("File too large") != std::string::npos
               ? 0
               : 1;
  }
  return 2;
}

} // namespace

/// The cache keeps within FSL_CACHE_MAX_BYTES: the least recently used entries go (a
/// hit refreshes an entry), never the one just written; a bound that is no byte count is
/// refused before anything is compiled.
void testEviction(const std::string &cache) {
  const std::string directory = cache + "/evict";
  Result a = compile(tinySource("evict-a"), "a.cu", directory);
  Result b = compile(tinySource("evict-b"), "b.cu", directory);
  expect(a.status == FSL_OK && b.status == FSL_OK, "two entries compiled", a.error + b.error);
  struct stat info;
  lstat(a.path.c_str(), &info);
  const long long entryBytes = info.st_size;
  // Entries' times are whole seconds apart on some filesystems: order them explicitly.
  struct timespec old[2] = {{1000, 0}, {1000, 0}}, older[2] = {{500, 0}, {500, 0}};
  utimensat(AT_FDCWD, a.path.c_str(), old, AT_SYMLINK_NOFOLLOW);
  utimensat(AT_FDCWD, b.path.c_str(), older, AT_SYMLINK_NOFOLLOW);
  // A hit on b makes it the most recently used; a is now the oldest.
  Result hit = compile(tinySource("evict-b"), "b.cu", directory);
  expect(hit.hit, "b is a hit", hit.path);
  // Room for two entries: the third write evicts one, the least recently used (a).
  std::string bound = std::to_string(2 * entryBytes + entryBytes / 2);
  setenv("FSL_CACHE_MAX_BYTES", bound.c_str(), 1);
  Result c = compile(tinySource("evict-c"), "c.cu", directory);
  expect(c.status == FSL_OK && !c.hit, "a third entry is compiled under the bound", c.error);
  expect(!exists(a.path) && exists(b.path) && exists(c.path),
         "the least recently used entry is evicted, the used and the new one kept",
         join(listDirectory(directory)));
  // A bound smaller than one entry: everything but the entry just written goes.
  setenv("FSL_CACHE_MAX_BYTES", "1", 1);
  Result d = compile(tinySource("evict-d"), "d.cu", directory);
  expect(d.status == FSL_OK && exists(d.path) && !exists(b.path) && !exists(c.path),
         "a bound under one entry keeps only the new one", join(listDirectory(directory)));
  // Stale temporary files of a writer that died go with an eviction; links never count.
  std::string stale = d.path + ".tmp.999999.1.0";
  writeFile(stale, "partial");
  struct timespec hoursAgo[2] = {{time(nullptr) - 7200, 0}, {time(nullptr) - 7200, 0}};
  utimensat(AT_FDCWD, stale.c_str(), hoursAgo, AT_SYMLINK_NOFOLLOW);
  std::string link = directory + "/planted-" + std::string(64, 'f') + ".fsljit";
  symlink(d.path.c_str(), link.c_str());
  setenv("FSL_CACHE_MAX_BYTES", "0", 1); // no bound: nothing is evicted but stale files
  Result e = compile(tinySource("evict-e"), "e.cu", directory);
  expect(e.status == FSL_OK && exists(d.path) && exists(e.path) && isLink(link) && exists(stale),
         "FSL_CACHE_MAX_BYTES=0: no bound", join(listDirectory(directory)));
  setenv("FSL_CACHE_MAX_BYTES", "64M", 1);
  Result f = compile(tinySource("evict-f"), "f.cu", directory);
  expect(f.status == FSL_OK && !exists(stale) && isLink(link) && exists(d.path),
         "a bound removes stale temporary files, never a link or a fitting entry",
         join(listDirectory(directory)));
  for (const char *bad : {"lots", "12X", "-5", "99999999999999999999"}) {
    setenv("FSL_CACHE_MAX_BYTES", bad, 1);
    Result refused = compile(tinySource("evict-bad"), "bad.cu", directory);
    expect(refused.status == FSL_ERROR_CACHE &&
               refused.error.find("FSL_CACHE_MAX_BYTES='" + std::string(bad) + "'") !=
                   std::string::npos,
           "an FSL_CACHE_MAX_BYTES that is no byte count is refused with its value", refused.error);
  }
  unsetenv("FSL_CACHE_MAX_BYTES");
}

int main(int argc, char **argv) {
  if (argc == 5 && std::strcmp(argv[1], "--child") == 0)
    return child(argv[2], argv[3], argv[4]);
  if (argc != 3) {
    std::fprintf(stderr, "usage: jit_test GENERATED.cu CACHE_DIR\n");
    return 2;
  }
  std::string source = readFile(argv[1]);
  std::string cache = argv[2];
  testSha256();
  testBasics(source, cache);
  testCorruptEntries(cache);
  testLinks(cache);
  testNames(cache);
  testUnwritable(cache);
  testConcurrency(cache);
  testEviction(cache);
  return fsl_test::report("jit");
}
