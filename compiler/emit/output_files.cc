#include "compiler/emit/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "compiler/ir/error.h"

namespace ingot::emit {
namespace {

// Writes |bytes| to a new temporary file beside |path|; returns its name.
std::string write_temp(const std::string& path, std::span<const uint8_t> bytes, bool executable) {
  static std::atomic<uint64_t> counter{0};
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(getpid()), counter++);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, executable ? 0777 : 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail("cannot write '{}': {}", path, std::strerror(errno));
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(temp.c_str());
      fail("cannot write '{}': {}", path, std::strerror(error));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail("cannot write '{}': {}", path, std::strerror(error));
  }
  return temp;
}

}  // namespace

void write_files_atomically(const std::vector<OutputFile>& files) {
  std::vector<std::string> temps;
  auto remove_temps = [&](size_t from) {
    for (size_t i = from; i < temps.size(); ++i) ::unlink(temps[i].c_str());
  };
  try {
    for (const OutputFile& f : files) temps.push_back(write_temp(f.path, f.bytes, f.executable));
  } catch (...) {
    remove_temps(0);
    throw;
  }
  // A destination that rename cannot replace (a folder) fails before any file moves,
  // so an artifact never lands in part.
  for (size_t i = 0; i < files.size(); ++i) {
    struct stat st;
    if (::lstat(files[i].path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      remove_temps(0);
      fail("cannot write '{}': {}", files[i].path, std::strerror(EISDIR));
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (std::rename(temps[i].c_str(), files[i].path.c_str()) != 0) {
      const int error = errno;
      remove_temps(i);
      // The files already moved belong to the failed artifact: take them away again.
      for (size_t j = 0; j < i; ++j) ::unlink(files[j].path.c_str());
      fail("cannot write '{}': {}", files[i].path, std::strerror(error));
    }
  }
}

void write_file_atomically(const std::string& path, std::span<const uint8_t> bytes, bool executable) {
  const std::string temp = write_temp(path, bytes, executable);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail("cannot write '{}': {}", path, std::strerror(error));
  }
}

}  // namespace ingot::emit
