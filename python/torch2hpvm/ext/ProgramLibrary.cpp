// ProgramLibrary.cpp - loading a program's shared library from its bytes,
// its entry points, scratch directories and file reading for the
// TorchScript class (Program.cpp).
#include "ProgramLibrary.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace torch2hpvm {

namespace {

std::string errnoText() { return std::strerror(errno); }

/// Writes all of \p size bytes to \p fd; false on error.
bool writeAll(int fd, const void* bytes, size_t size) {
  const char* p = static_cast<const char*>(bytes);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// A library image opened from an anonymous memory file (nothing on disk,
/// and no noexec mount in the way); nullptr with \p why set when memory
/// files are not available or the image does not load. The file stays
/// open: the dynamic loader knows a library by the name it was opened
/// with, and a descriptor number used again would name the library loaded
/// first.
void* openFromMemory(const void* bytes, size_t size, std::string& why) {
  int fd = ::memfd_create("torch2hpvm-program", MFD_CLOEXEC);
  if (fd < 0) {
    why = "memfd_create: " + errnoText();
    return nullptr;
  }
  void* handle = nullptr;
  // (The file is closed only when the image did not load.)
  if (writeAll(fd, bytes, size)) {
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = ::dlerror();
      why = e ? e : "dlopen failed";
    }
  } else {
    why = "writing a memory file: " + errnoText();
  }
  if (!handle)
    ::close(fd);
  return handle;
}

template <class Fn>
void bind(void* handle, const char* name, Fn& fn, const std::string& origin) {
  void* symbol = ::dlsym(handle, name);
  if (!symbol)
    throw ProgramError(origin +
                       ": not a torch2hpvm program library (it has "
                       "no " +
                       name + "); re-export the model with this torch2hpvm");
  fn = reinterpret_cast<Fn>(symbol);
}

} // namespace

EntryPoints loadProgramLibrary(const void* bytes, size_t size,
                               const std::string& origin) {
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
  if (size < 64 || std::memcmp(bytes, elf, 4) != 0)
    throw ProgramError(origin + ": not a shared library (no ELF header)");
  std::string why;
  void* handle = openFromMemory(bytes, size, why);
  if (!handle) {
    // A memory file that would not load for a reason of its own (say, a
    // kernel without memfd_create) gets one more try from a file.
    if (why.rfind("memfd_create", 0) != 0 && why.rfind("writing", 0) != 0)
      throw ProgramError(origin +
                         ": the program's library does not load: " + why);
    ScratchDir dir;
    const std::string path = dir.write("program.so", bytes, size);
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = ::dlerror();
      throw ProgramError(origin + ": the program's library does not load: " +
                         (e ? e : "dlopen failed"));
    }
  }
  EntryPoints e{};
  bind(handle, "hpvm_rt_library_version", e.libraryVersion, origin);
  const int version = e.libraryVersion();
  if (version != HPVM_RT_LIBRARY_VERSION)
    throw ProgramError(origin + ": the program's library speaks version " +
                       std::to_string(version) +
                       " of hpvm_rt's entry points; this torch2hpvm "
                       "speaks " +
                       std::to_string(HPVM_RT_LIBRARY_VERSION) +
                       " (re-export the model)");
  bind(handle, "hpvm_rt_model_name", e.modelName, origin);
  bind(handle, "hpvm_rt_default_config", e.defaultConfig, origin);
  bind(handle, "hpvm_rt_build_features", e.buildFeatures, origin);
  bind(handle, "hpvm_rt_model_shape", e.modelShape, origin);
  bind(handle, "hpvm_rt_model_outputs", e.modelOutputs, origin);
  bind(handle, "hpvm_rt_model_output", e.modelOutput, origin);
  bind(handle, "hpvm_rt_model_output_name", e.modelOutputName, origin);
  bind(handle, "hpvm_rt_open", e.open, origin);
  bind(handle, "hpvm_rt_set_config", e.setConfig, origin);
  bind(handle, "hpvm_rt_config_description", e.configDescription, origin);
  bind(handle, "hpvm_rt_set_threads", e.setThreads, origin);
  bind(handle, "hpvm_rt_run_outputs", e.runOutputs, origin);
  bind(handle, "hpvm_rt_close", e.close, origin);
  bind(handle, "hpvm_rt_last_error", e.lastError, origin);
  // (Libraries built before it was added lack it.)
  e.lastRunSeconds = reinterpret_cast<double (*)(hpvm_rt_model*)>(
      ::dlsym(handle, "hpvm_rt_last_run_seconds"));
  return e;
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp && *tmp ? tmp : "/tmp";
  std::string pattern = base + "/torch2hpvm-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw ProgramError("cannot create a temporary directory in " + base + ": " +
                       errnoText() + " (set TMPDIR)");
  path_ = pattern + "/";
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::write(const std::string& name, const void* bytes,
                              size_t size) {
  const std::string path = path_ + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    throw ProgramError("cannot create " + path + ": " + errnoText());
  const bool ok = writeAll(fd, bytes, size);
  const std::string why = ok ? "" : errnoText();
  if (::close(fd) != 0 || !ok)
    throw ProgramError("cannot write " + path + ": " +
                       (ok ? errnoText() : why));
  return path;
}

std::string ScratchDir::subdir(const std::string& name) {
  const std::string path = path_ + name;
  if (::mkdir(path.c_str(), 0700) != 0)
    throw ProgramError("cannot create " + path + ": " + errnoText());
  return path + "/";
}

void readWholeFileInto(const std::string& path, const std::string& what,
                       uint64_t limit,
                       const std::function<char*(size_t size)>& buffer) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw ProgramError("cannot read " + what + " " + path + ": " + errnoText());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw ProgramError(what + " " + path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > limit)
    throw ProgramError(what + " " + path + " has " +
                       std::to_string(st.st_size) + " bytes; at most " +
                       std::to_string(limit) + " are accepted");
  const size_t size = static_cast<size_t>(st.st_size);
  char* const data = buffer(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw ProgramError("cannot read " + what + " " + path + ": " +
                         errnoText());
    if (n == 0)
      throw ProgramError(what + " " + path + " shrank while it was read");
    done += static_cast<size_t>(n);
  }
}

std::string readWholeFile(const std::string& path, const std::string& what,
                          uint64_t limit) {
  std::string bytes;
  readWholeFileInto(path, what, limit, [&](size_t size) {
    bytes.resize(size);
    return bytes.data();
  });
  return bytes;
}

bool isPlainFileName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.')
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
          c == '-'))
      return false;
  return true;
}

Digest::Digest() { sha256_init(&ctx_); }

void Digest::add(const void* bytes, size_t size) {
  sha256_update(&ctx_, size, static_cast<const uint8_t*>(bytes));
}

void Digest::add(std::string_view text) {
  // Length first: "ab"+"c" and "a"+"bc" differ.
  const uint64_t n = text.size();
  add(&n, sizeof n);
  add(text.data(), text.size());
}

std::string Digest::hex() {
  uint8_t out[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx_, sizeof out, out);
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : out) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

} // namespace torch2hpvm
