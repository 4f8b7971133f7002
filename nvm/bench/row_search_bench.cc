// nvm_row_search_bench: measures matrix-container lookups with cross-row
// hints and bloom filters switched on and off (DESIGN.md: "a switch to turn
// hints and blooms off for the benchmark comparison").
//
//   nvm_row_search_bench [--rows=N] [--entries=N] [--value_size=N]
//                        [--queries=N] [--pool=PATH] [--pool_mb=N]
//
// Builds N rows of random 16-byte keys in a pool on /dev/shm (or --pool),
// then times Get of present keys, Get of absent keys, and Seek + 10 Next, in
// four modes. Prints one line per mode and operation, ns per op. The pool
// file is unlinked right after it is mapped, so a run ended by a signal or a
// timeout leaves nothing in /dev/shm.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/random.h"
#include "nvm/matrix_container.h"
#include "nvm/pool.h"

using namespace mxfs;

namespace {

class VecIter final : public Iterator {
 public:
  explicit VecIter(const std::map<std::string, std::string>* m) : m_(m), it_(m->end()) {}
  bool Valid() const override { return it_ != m_->end(); }
  void SeekToFirst() override { it_ = m_->begin(); }
  void SeekToLast() override {}
  void Seek(const Slice& t) override { it_ = m_->lower_bound(t.ToString()); }
  void Next() override { ++it_; }
  void Prev() override {}
  Slice key() const override { return it_->first; }
  Slice value() const override { return it_->second; }
  Status status() const override { return Status::OK(); }

 private:
  const std::map<std::string, std::string>* m_;
  std::map<std::string, std::string>::const_iterator it_;
};

std::string Key(uint64_t k) {
  char b[24];
  std::snprintf(b, sizeof(b), "%016llu", static_cast<unsigned long long>(k));
  return b;
}

long Flag(int argc, char** argv, const char* name, long def) {
  size_t n = std::strlen(name);
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], name, n) == 0 && argv[i][n] == '=') return std::atol(argv[i] + n + 1);
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  const long rows = Flag(argc, argv, "--rows", 20);
  const long entries = Flag(argc, argv, "--entries", 50000);
  const long value_size = Flag(argc, argv, "--value_size", 100);
  const long queries = Flag(argc, argv, "--queries", 200000);
  const long pool_mb = Flag(argc, argv, "--pool_mb", 1024);
  std::string path = "/dev/shm/nvm_row_search_bench." + std::to_string(getpid());
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], "--pool=", 7) == 0) path = argv[i] + 7;

  PoolCreateOptions po;
  po.size = static_cast<uint64_t>(pool_mb) << 20;
  po.wal_size = 4 << 20;
  auto pool = Pool::Create(path, po);
  if (!pool) {
    std::fprintf(stderr, "%s\n", pool.error().ToString().c_str());
    return 1;
  }
  // The benchmark only uses the mapping: drop the name now (a devdax device
  // keeps its node).
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(path.c_str());
  int rc = 0;
  {
    if (Status s = MatrixContainer::Format(pool->get()); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    ContainerOptions co;
    co.receiver_share = 1.0;
    auto c = MatrixContainer::Open(pool->get(), co);
    if (!c) {
      std::fprintf(stderr, "%s\n", c.error().ToString().c_str());
      return 1;
    }
    Random rnd(42);
    const uint64_t space = static_cast<uint64_t>(rows * entries) * 4;
    std::vector<std::string> present;
    for (long r = 0; r < rows && rc == 0; r++) {
      std::map<std::string, std::string> m;
      while (m.size() < static_cast<size_t>(entries)) m[Key(rnd.Uniform(space) * 2)] = std::string(value_size, 'v');
      for (auto& [k, v] : m)
        if (rnd.OneIn(64)) present.push_back(k);
      VecIter in(&m);
      auto id = (*c)->AddRow(&in);
      if (!id) {
        std::fprintf(stderr, "%s\n", id.error().ToString().c_str());
        rc = 1;
      }
    }
    std::printf("rows=%ld entries/row=%ld value_size=%ld queries=%ld granularity=%s\n", rows, entries, value_size,
                queries, (*pool)->GranularityName());
    struct Mode {
      const char* name;
      bool hints, blooms;
    } modes[] = {{"hints+blooms", true, true}, {"hints", true, false}, {"blooms", false, true}, {"full-search", false, false}};
    for (const Mode& mode : modes) {
      if (rc != 0) break;
      (*c)->SetSearchMode(mode.hints, mode.blooms);
      auto v = (*c)->Current();
      uint64_t sink = 0;
      auto time = [&](const char* op, auto&& fn) {
        Random q(7);
        auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < queries; i++) fn(&q);
        double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%-13s %-12s %8.0f ns/op\n", mode.name, op, ns / static_cast<double>(queries));
      };
      time("get-present", [&](Random* q) {
        const std::string& k = present[q->Uniform(present.size())];
        v->Get(k, [&](const Slice& key, const Slice&) {
          sink += key.size();
          return key == Slice(k);
        });
      });
      time("get-absent", [&](Random* q) {
        std::string k = Key(q->Uniform(space) * 2 + 1);  // odd: never written
        v->Get(k, [&](const Slice& key, const Slice&) {
          sink += key.size();
          return key == Slice(k);
        });
      });
      auto it = (*c)->NewIterator();
      time("seek+10next", [&](Random* q) {
        it->Seek(Key(q->Uniform(space * 2)));
        for (int n = 0; n < 10 && it->Valid(); n++, it->Next()) sink += it->key().size();
      });
      if (sink == 42) std::printf(" ");
    }
  }
  return rc;
}
