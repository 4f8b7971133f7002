// Helpers shared by the nvm/ tests: scratch pools under a fresh /dev/shm
// directory, a vector-backed sorted iterator, and a fork-and-kill runner.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/iterator.h"
#include "base/random.h"
#include "nvm/pool.h"

namespace mxfs::testing {

// A fresh directory in /dev/shm, removed with everything in it.
class ShmDir {
 public:
  ShmDir() {
    char tmpl[] = "/dev/shm/mxfs-nvm-test-XXXXXX";
    char* d = mkdtemp(tmpl);
    path_ = d ? d : "";
  }
  ~ShmDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ShmDir(const ShmDir&) = delete;
  ShmDir& operator=(const ShmDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline PoolUuid TestUuid(uint8_t seed) {
  PoolUuid u{};
  for (size_t i = 0; i < u.size(); i++) u[i] = static_cast<uint8_t>(seed * 31 + i);
  return u;
}

inline PoolCreateOptions SmallPool(uint64_t size = 32ull << 20, uint64_t wal = 4ull << 20) {
  PoolCreateOptions o;
  o.size = size;
  o.wal_size = wal;
  o.uuid = TestUuid(1);
  return o;
}

// An iterator over a sorted vector of (key, value) pairs (stands in for a
// memtable as AddRow's input).
class VectorIterator final : public Iterator {
 public:
  explicit VectorIterator(std::vector<std::pair<std::string, std::string>> kv) : kv_(std::move(kv)) {}
  bool Valid() const override { return i_ < kv_.size(); }
  void SeekToFirst() override { i_ = 0; }
  void SeekToLast() override { i_ = kv_.empty() ? 0 : kv_.size() - 1; }
  void Seek(const Slice& t) override {
    i_ = 0;
    while (i_ < kv_.size() && Slice(kv_[i_].first).compare(t) < 0) i_++;
  }
  void Next() override { i_++; }
  void Prev() override { i_ = i_ == 0 ? kv_.size() : i_ - 1; }
  Slice key() const override { return kv_[i_].first; }
  Slice value() const override { return kv_[i_].second; }
  Status status() const override { return Status::OK(); }

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
  size_t i_ = 0;
};

// n random distinct keys from a space of `space` keys, sorted, with values.
inline std::vector<std::pair<std::string, std::string>> RandomRow(Random* rnd, size_t n, uint64_t space,
                                                                  const std::string& tag) {
  std::map<std::string, std::string> m;
  while (m.size() < n) {
    char k[32];
    snprintf(k, sizeof(k), "k%08llu", static_cast<unsigned long long>(rnd->Uniform(space)));
    m[k] = tag + ":" + k + std::string(rnd->Uniform(40), 'v');
  }
  return {m.begin(), m.end()};
}

// Runs fn in a forked child with MXFS_KILL_AT=point. Returns the raw wait
// status; the child exits 0 if fn returned true and the point never fired.
inline int RunChildWithKillPoint(const char* point, const std::function<bool()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("MXFS_KILL_AT", point, 1);
    bool ok = fn();
    _exit(ok ? 0 : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

inline bool KilledBySigkill(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }

}  // namespace mxfs::testing
