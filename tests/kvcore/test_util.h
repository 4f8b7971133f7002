// Helpers shared by the kvcore tests: a scratch directory under /tmp that is
// removed afterwards, and small file manipulations for corruption tests.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace mxfs::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/mxfs-kv-XXXXXX";
    const char* p = ::mkdtemp(tmpl);
    path_ = p ? p : "/tmp/mxfs-kv-failed";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A pool path under /dev/shm that does not exist yet (the engine creates
// it), removed afterwards. Empty when unused.
class TempPool {
 public:
  explicit TempPool(bool use = true) {
    if (!use) return;
    char tmpl[] = "/dev/shm/mxfs-kvpool-XXXXXX";
    const int fd = ::mkstemp(tmpl);
    if (fd >= 0) ::close(fd);
    path_ = tmpl;
    ::unlink(path_.c_str());
  }
  ~TempPool() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempPool(const TempPool&) = delete;
  TempPool& operator=(const TempPool&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

// Files in dir whose names end with suffix (or start with it when prefix is true), sorted.
inline std::vector<std::string> FilesMatching(const std::string& dir, const std::string& pattern, bool prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const bool match = prefix ? name.rfind(pattern, 0) == 0
                              : name.size() >= pattern.size() &&
                                    name.compare(name.size() - pattern.size(), pattern.size(), pattern) == 0;
    if (match) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Runs fn on a new thread and waits. A forked child does its database work
// this way: the file layer keeps one io_uring per thread, and the ring of the
// thread that called fork() is shared with the parent, so the child must not
// submit on it.
template <typename Fn>
void RunInFreshThread(Fn&& fn) {
  std::thread t(std::forward<Fn>(fn));
  t.join();
}

// A crash test's child reports to its parent over a pipe, line by line; a
// parent that is gone ends the child (exit 3).
inline void WriteLine(int fd, const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n <= 0) _exit(3);
    off += static_cast<size_t>(n);
  }
}

}  // namespace mxfs::testing
