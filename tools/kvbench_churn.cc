#include "tools/kvbench_churn.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "kvcore/include/write_batch.h"

namespace mxfs::kvbench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void PutBe64(std::string* s, uint64_t v) {
  for (int i = 7; i >= 0; i--) s->push_back(static_cast<char>(v >> (i * 8)));
}
uint64_t GetBe64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}

std::string InodeKey(uint64_t ino) {
  std::string k = "I";
  PutBe64(&k, ino);
  return k;
}
std::string DentryPrefix(uint64_t parent) {
  std::string k = "D";
  PutBe64(&k, parent);
  return k;
}
std::string DataKey(uint64_t ino) {
  std::string k = "F";
  PutBe64(&k, ino);
  PutBe64(&k, 0);
  return k;
}
// An inode record of the size MatrixFS stores (the mode's type first).
std::string InodeValue(uint64_t ino, bool dir, uint64_t stamp) {
  std::string v(dir ? "d" : "f");
  PutBe64(&v, ino);
  PutBe64(&v, stamp);
  v.resize(96, '\0');
  return v;
}

double Percentile(std::vector<double>* v, double p) {
  if (v->empty()) return 0;
  const size_t i = std::min(v->size() - 1, static_cast<size_t>(p * static_cast<double>(v->size())));
  std::nth_element(v->begin(), v->begin() + static_cast<long>(i), v->end());
  return (*v)[i];
}

// VmRSS and RssAnon of this process, in MB.
void Memory(double* rss, double* anon) {
  *rss = *anon = 0;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %llu kB", &kb) == 1) *rss = static_cast<double>(kb) / 1024;
    if (std::sscanf(line.c_str(), "RssAnon: %llu kB", &kb) == 1) *anon = static_cast<double>(kb) / 1024;
  }
}

// The container's "name value" line of matrixkv.container, "0" if absent.
std::string ContainerField(DB* db, const std::string& name) {
  std::string c;
  if (!db->GetProperty("matrixkv.container", &c)) return "0";
  const size_t at = ("\n" + c).find("\n" + name + " ");
  if (at == std::string::npos) return "0";
  const size_t from = at + name.size() + 1;
  return c.substr(from, c.find('\n', from) - from);
}

class Churn {
 public:
  Churn(DB* db, const Flags& f, const ReadOptions& ro, const WriteOptions& wo)
      : db_(db), f_(f), ro_(ro), wo_(wo), data_(static_cast<size_t>(f.value_size), 'x') {}

  uint64_t Run() {
    std::unique_ptr<std::ofstream> csv;
    if (!f_.churn_csv.empty()) {
      csv = std::make_unique<std::ofstream>(f_.churn_csv);
      if (!*csv) Fail("--churn_csv: cannot create " + f_.churn_csv);
      *csv << "cycle,elapsed_s,create_s,rm_s,rows,receiver_rows,compactor_rows,get_p50_us,get_p99_us,"
              "scan_p50_us,scan_p99_us,rss_mb,anon_mb\n";
    }
    const Clock::time_point start = Clock::now();
    for (int64_t c = 1; c <= f_.churn_cycles; c++) {
      gets_.clear();
      scans_.clear();
      const Clock::time_point t0 = Clock::now();
      const uint64_t tree = Create(c);
      const double create_s = SecondsSince(t0);
      const Clock::time_point t1 = Clock::now();
      Remove(DentryPrefix(kRoot) + "tree" + std::to_string(c), kRoot, tree);
      const double rm_s = SecondsSince(t1);
      const std::string rows = ContainerField(db_, "rows"), rr = ContainerField(db_, "receiver.rows"),
                        cr = ContainerField(db_, "compactor.rows");
      const double g50 = Percentile(&gets_, 0.5), g99 = Percentile(&gets_, 0.99);
      const double s50 = Percentile(&scans_, 0.5), s99 = Percentile(&scans_, 0.99);
      double rss, anon;
      Memory(&rss, &anon);
      std::printf("fschurn cycle %" PRId64 ": create %.3f s, rm %.3f s, rows %s (receiver %s + compactor %s), "
                  "get p50/p99 %.1f/%.1f us, scan p50/p99 %.1f/%.1f us, rss %.1f MB, anon %.1f MB\n",
                  c, create_s, rm_s, rows.c_str(), rr.c_str(), cr.c_str(), g50, g99, s50, s99, rss, anon);
      std::fflush(stdout);
      if (csv) {
        char line[512];
        std::snprintf(line, sizeof(line), "%" PRId64 ",%.3f,%.3f,%.3f,%s,%s,%s,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f\n", c,
                      SecondsSince(start), create_s, rm_s, rows.c_str(), rr.c_str(), cr.c_str(), g50, g99, s50,
                      s99, rss, anon);
        *csv << line << std::flush;
      }
    }
    return ops_;
  }

 private:
  static constexpr uint64_t kRoot = 1;

  void Write(WriteBatch* b) {
    Status s = db_->Write(wo_, b);
    if (!s.ok()) Fail("fschurn: write: " + s.ToString());
    b->Clear();
    ops_++;
  }

  // A new directory or file `name` in parent: its dentry, inode and (for a
  // file) data block, and the parent's inode, in one batch.
  uint64_t Make(uint64_t parent, const std::string& name, bool dir) {
    const uint64_t ino = next_ino_++;
    WriteBatch b;
    std::string d = DentryPrefix(parent) + name, v;
    PutBe64(&v, ino);
    v.push_back(dir ? 'd' : 'f');
    b.Put(d, v);
    b.Put(InodeKey(ino), InodeValue(ino, dir, ++stamp_));
    if (!dir) b.Put(DataKey(ino), data_);
    b.Put(InodeKey(parent), InodeValue(parent, true, ++stamp_));
    Write(&b);
    return ino;
  }

  uint64_t Create(int64_t cycle) {
    const uint64_t tree = Make(kRoot, "tree" + std::to_string(cycle), true);
    const int64_t per_dir = f_.churn_files_per_dir;
    uint64_t dir = 0;
    for (int64_t i = 0; i < f_.churn_files; i++) {
      if (i % per_dir == 0) dir = Make(tree, "dir" + std::to_string(i / per_dir), true);
      Make(dir, "file" + std::to_string(i % per_dir) + ".h", false);
    }
    return tree;
  }

  // rm -rf of ino (a directory, dentry in parent): lists it, removes its
  // children (directories recursively), then itself.
  void Remove(const std::string& dentry, uint64_t parent, uint64_t ino) {
    struct Child {
      std::string dentry;
      uint64_t ino;
      bool dir;
    };
    std::vector<Child> children;
    const std::string prefix = DentryPrefix(ino);
    const Clock::time_point t0 = Clock::now();
    {
      ReadOptions ro = ro_;
      if (f_.prefix_scans) ro.prefix = prefix;
      std::unique_ptr<Iterator> it = db_->NewIterator(ro);
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
        const Slice v = it->value();
        if (v.size() != 9) Fail("fschurn: dentry " + it->key().ToEscaped() + " has a value of " +
                                std::to_string(v.size()) + " bytes, expected 9");
        children.push_back(Child{it->key().ToString(), GetBe64(v.data()), v[8] == 'd'});
      }
      if (!it->status().ok()) Fail("fschurn: listing: " + it->status().ToString());
    }
    scans_.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    ops_++;
    for (const Child& c : children) {
      if (c.dir) {
        Remove(c.dentry, ino, c.ino);
        continue;
      }
      std::string inode;
      const Clock::time_point g0 = Clock::now();
      Status s = db_->Get(ro_, InodeKey(c.ino), &inode);
      gets_.push_back(std::chrono::duration<double, std::micro>(Clock::now() - g0).count());
      ops_++;
      if (!s.ok()) Fail("fschurn: inode of " + Slice(c.dentry).ToEscaped() + ": " + s.ToString());
      WriteBatch b;
      b.Delete(c.dentry);
      b.Delete(InodeKey(c.ino));
      b.Delete(DataKey(c.ino));
      b.Put(InodeKey(ino), InodeValue(ino, true, ++stamp_));
      Write(&b);
    }
    // The directory itself (rmdir): its inode is looked up as well.
    std::string inode;
    const Clock::time_point g0 = Clock::now();
    Status s = db_->Get(ro_, InodeKey(ino), &inode);
    gets_.push_back(std::chrono::duration<double, std::micro>(Clock::now() - g0).count());
    ops_++;
    if (!s.ok()) Fail("fschurn: inode of directory " + std::to_string(ino) + ": " + s.ToString());
    WriteBatch b;
    b.Delete(dentry);
    b.Delete(InodeKey(ino));
    b.Put(InodeKey(parent), InodeValue(parent, true, ++stamp_));
    Write(&b);
  }

  DB* const db_;
  const Flags& f_;
  const ReadOptions ro_;
  const WriteOptions wo_;
  const std::string data_;
  uint64_t next_ino_ = kRoot + 1;
  uint64_t stamp_ = 0;
  uint64_t ops_ = 0;
  std::vector<double> gets_, scans_;  // microseconds, this cycle
};

}  // namespace

uint64_t RunFsChurn(DB* db, const Flags& flags, const ReadOptions& ro, const WriteOptions& wo) {
  return Churn(db, flags, ro, wo).Run();
}

}  // namespace mxfs::kvbench
