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

#include "base/cli_util.h"
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

const Cli kCli("nvm_row_search_bench",
               "usage: nvm_row_search_bench [--rows=N] [--entries=N] [--value_size=N]\n"
               "                            [--queries=N] [--pool=PATH] [--pool_mb=N]\n"
               "  --rows=N        rows in the container (default 20)\n"
               "  --entries=N     entries per row (default 50000)\n"
               "  --value_size=N  bytes per value (default 100)\n"
               "  --queries=N     lookups per mode and operation (default 200000)\n"
               "  --pool=PATH     the pool file (default /dev/shm/nvm_row_search_bench.PID, unlinked once mapped)\n"
               "  --pool_mb=N     pool size in MiB (default 1024)\n"
               "  -h, --help      this text\n");

struct Flags {
  long rows = 20;
  long entries = 50000;
  long value_size = 100;
  long queries = 200000;
  long pool_mb = 1024;
  std::string path = "/dev/shm/nvm_row_search_bench." + std::to_string(getpid());
};

Flags ParseFlags(int argc, char** argv) {
  kCli.HelpIfAsked(argc, argv);
  Flags f;
  kCli.ForEachFlag(argc, argv, [&](const std::string& name, const std::string& v) {
    if (name == "rows") f.rows = kCli.IntFlag(name, v, 1);
    else if (name == "entries") f.entries = kCli.IntFlag(name, v, 1);
    else if (name == "value_size") f.value_size = kCli.IntFlag(name, v, 1);
    else if (name == "queries") f.queries = kCli.IntFlag(name, v, 1);
    else if (name == "pool_mb") f.pool_mb = kCli.IntFlag(name, v, 1);
    else if (name == "pool") {
      if (v.empty() || Cli::IsOption(v.c_str())) kCli.Fail("--pool: \"" + v + "\" is not a path");
      f.path = v;
    } else return false;
    return true;
  });
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  const long rows = flags.rows;
  const long entries = flags.entries;
  const long value_size = flags.value_size;
  const long queries = flags.queries;
  const long pool_mb = flags.pool_mb;
  const std::string path = flags.path;

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
