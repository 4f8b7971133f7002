#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <map>
#include <thread>
#include <vector>
#include <string>

#include "base/coding.h"
#include "base/random.h"
#include "ssd/block_cache.h"
#include "ssd/fault_injection_fs.h"
#include "ssd/file_system.h"
#include "ssd/table.h"
#include "ssd/table_format.h"
#include "tests/ssd/scratch_dir.h"

using namespace mxfs;

namespace {

std::string KeyOf(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key%08d", i);
  return buf;
}

std::string ValueOf(int i) { return "value-" + std::to_string(i) + std::string(i % 37, 'v'); }

using KV = std::map<std::string, std::string>;

uint64_t BuildTable(const std::string& path, const KV& kv, const TableOptions& opts = {}) {
  auto file = DefaultFileSystem()->NewWritableFile(path);
  REQUIRE(file.has_value());
  TableBuilder builder(opts, file->get());
  for (const auto& [k, v] : kv) builder.Add(k, v);
  REQUIRE(builder.Finish().ok());
  CHECK(builder.NumEntries() == kv.size());
  REQUIRE((*file)->Sync().ok());
  REQUIRE((*file)->Close().ok());
  auto size = DefaultFileSystem()->GetFileSize(path);
  REQUIRE(size.has_value());
  CHECK(*size == builder.FileSize());
  return builder.FileSize();
}

Result<std::unique_ptr<Table>> OpenTable(const std::string& path, const TableOptions& opts = {}, uint64_t id = 1) {
  auto file = DefaultFileSystem()->NewRandomAccessFile(path);
  if (!file) return Err(file.error());
  auto size = DefaultFileSystem()->GetFileSize(path);
  if (!size) return Err(size.error());
  return Table::Open(opts, std::move(*file), *size, id);
}

KV TenThousand() {
  KV kv;
  for (int i = 0; i < 20000; i += 2) kv[KeyOf(i)] = ValueOf(i);
  return kv;
}

void FlipByte(const std::string& path, uint64_t offset) {
  int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  char c;
  REQUIRE(::pread(fd, &c, 1, static_cast<off_t>(offset)) == 1);
  c = static_cast<char>(c ^ 0x40);
  REQUIRE(::pwrite(fd, &c, 1, static_cast<off_t>(offset)) == 1);
  ::close(fd);
}

}  // namespace

TEST_CASE("Table: 10k keys round-trip through iteration, seek, prev and get") {
  ScratchDir dir;
  const std::string path = dir.File("000001.sst");
  const KV kv = TenThousand();
  BuildTable(path, kv);
  auto table = OpenTable(path);
  REQUIRE(table.has_value());
  const Table& t = **table;
  CHECK(t.properties().num_entries == kv.size());
  CHECK(t.properties().smallest_key == kv.begin()->first);
  CHECK(t.properties().largest_key == kv.rbegin()->first);
  CHECK(t.properties().num_data_blocks > 10);
  CHECK(t.path() == path);

  auto it = t.NewIterator();
  auto expect = kv.begin();
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++expect) {
    REQUIRE(expect != kv.end());
    REQUIRE(it->key() == Slice(expect->first));
    REQUIRE(it->value() == Slice(expect->second));
  }
  CHECK(expect == kv.end());
  REQUIRE(it->status().ok());

  auto rexpect = kv.rbegin();
  for (it->SeekToLast(); it->Valid(); it->Prev(), ++rexpect) {
    REQUIRE(rexpect != kv.rend());
    REQUIRE(it->key() == Slice(rexpect->first));
  }
  CHECK(rexpect == kv.rend());

  Random rnd(7);
  for (int n = 0; n < 2000; n++) {
    const int i = static_cast<int>(rnd.Uniform(20002));
    const std::string target = KeyOf(i);
    it->Seek(target);
    auto want = kv.lower_bound(target);
    if (want == kv.end()) {
      REQUIRE_FALSE(it->Valid());
      continue;
    }
    REQUIRE(it->Valid());
    REQUIRE(it->key() == Slice(want->first));
    // Prev then Next crosses block boundaries both ways.
    it->Prev();
    if (want == kv.begin()) {
      CHECK_FALSE(it->Valid());
    } else {
      REQUIRE(it->Valid());
      CHECK(it->key() == Slice(std::prev(want)->first));
      it->Next();
      REQUIRE(it->Valid());
      CHECK(it->key() == Slice(want->first));
    }

    std::string got_key, got_value;
    Status s = t.Get(target, [&](const Slice& k, const Slice& v) {
      got_key = k.ToString();
      got_value = v.ToString();
    });
    if (kv.count(target)) {
      REQUIRE(s.ok());
      CHECK(got_key == target);
      CHECK(got_value == kv.at(target));
    } else if (s.ok()) {
      CHECK(got_key == want->first);  // bloom false positive: first key >= target
    } else {
      CHECK(s.IsNotFound());
    }
  }
  CHECK(t.VerifyAll().ok());
}

TEST_CASE("Table: approximate offsets grow with the key") {
  ScratchDir dir;
  const KV kv = TenThousand();
  uint64_t size = BuildTable(dir.File("t.sst"), kv);
  auto table = OpenTable(dir.File("t.sst"));
  REQUIRE(table.has_value());
  uint64_t prev = 0;
  for (int i = 0; i < 20000; i += 1000) {
    uint64_t off = (*table)->ApproximateOffsetOf(KeyOf(i));
    CHECK(off >= prev);
    prev = off;
  }
  CHECK((*table)->ApproximateOffsetOf(KeyOf(0)) == 0);
  CHECK((*table)->ApproximateOffsetOf("zzz") == (*table)->properties().data_bytes);
  CHECK(prev < size);
}

TEST_CASE("Table: the bloom filter answers on filter_key and skips absent keys") {
  ScratchDir dir;
  TableOptions opts;
  // Keys carry an 8-byte suffix the filter must ignore (like internal keys).
  opts.filter_key = [](const Slice& k) { return Slice(k.data(), k.size() - 8); };
  KV kv;
  for (int i = 0; i < 10000; i++) kv[KeyOf(i * 2) + "SUFFIX01"] = "v";
  BuildTable(dir.File("t.sst"), kv, opts);
  auto table = OpenTable(dir.File("t.sst"), opts);
  REQUIRE(table.has_value());
  CHECK((*table)->KeyMayMatch(KeyOf(10) + "OTHERSUF"));
  int may_match = 0;
  for (int i = 0; i < 10000; i++) may_match += (*table)->KeyMayMatch(KeyOf(i * 2 + 1) + "SUFFIX01") ? 1 : 0;
  CHECK(may_match < 200);
  // Without a filter every key may match.
  TableOptions nofilter;
  nofilter.bloom_bits_per_key = 0;
  BuildTable(dir.File("n.sst"), kv, nofilter);
  auto n = OpenTable(dir.File("n.sst"), nofilter);
  REQUIRE(n.has_value());
  CHECK((*n)->KeyMayMatch("absent"));
  CHECK((*n)->properties().bloom_bits_per_key == 0);
  CHECK((*n)->VerifyAll().ok());
}

TEST_CASE("Table: an empty table opens and finds nothing") {
  ScratchDir dir;
  BuildTable(dir.File("e.sst"), {});
  auto table = OpenTable(dir.File("e.sst"));
  REQUIRE(table.has_value());
  auto it = (*table)->NewIterator();
  it->SeekToFirst();
  CHECK_FALSE(it->Valid());
  it->SeekToLast();
  CHECK_FALSE(it->Valid());
  CHECK(it->status().ok());
  CHECK((*table)->Get("a", [](const Slice&, const Slice&) {}).IsNotFound());
  CHECK((*table)->VerifyAll().ok());
}

TEST_CASE("Table: out-of-order keys make the builder fail") {
  ScratchDir dir;
  auto file = DefaultFileSystem()->NewWritableFile(dir.File("bad.sst"));
  REQUIRE(file.has_value());
  TableBuilder builder(TableOptions{}, file->get());
  builder.Add("b", "1");
  builder.Add("a", "2");
  CHECK(builder.status().IsInvalidArgument());
  CHECK(builder.Finish().IsInvalidArgument());
}

TEST_CASE("Table: opening with another comparator is refused") {
  ScratchDir dir;
  BuildTable(dir.File("t.sst"), {{"a", "1"}});
  struct Reverse final : Comparator {
    int Compare(const Slice& a, const Slice& b) const override { return b.compare(a); }
    const char* Name() const override { return "test.Reverse"; }
    void FindShortestSeparator(std::string*, const Slice&) const override {}
    void FindShortSuccessor(std::string*) const override {}
  } reverse;
  TableOptions opts;
  opts.comparator = &reverse;
  auto table = OpenTable(dir.File("t.sst"), opts);
  REQUIRE_FALSE(table.has_value());
  CHECK(table.error().IsInvalidArgument());
  CHECK(table.error().message().find("mxfs.Bytewise") != std::string_view::npos);
}

TEST_CASE("Table: a flipped byte in a data block is reported with file and offset") {
  ScratchDir dir;
  const std::string path = dir.File("000009.sst");
  const KV kv = TenThousand();
  BuildTable(path, kv);
  // Find the second data block's offset, then damage a byte inside it.
  uint64_t second_block = 0;
  {
    auto table = OpenTable(path);
    REQUIRE(table.has_value());
    auto it = (*table)->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      uint64_t off = (*table)->ApproximateOffsetOf(it->key());
      if (off > 0) {
        second_block = off;
        break;
      }
    }
  }
  REQUIRE(second_block > 0);
  FlipByte(path, second_block + 20);
  const std::string where = "at offset " + std::to_string(second_block);

  auto table = OpenTable(path);
  REQUIRE(table.has_value());  // metadata is intact; the damage shows on read
  Status s = (*table)->Get(kv.rbegin()->first.substr(0, 0) + KeyOf(0), [](const Slice&, const Slice&) {});
  CHECK(s.ok());  // first block untouched
  auto it = (*table)->NewIterator();
  int seen = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) seen++;
  CHECK(seen > 0);
  CHECK(seen < static_cast<int>(kv.size()));
  Status is = it->status();
  REQUIRE(is.IsCorruption());
  CHECK(is.message().find(path) != std::string_view::npos);
  CHECK(is.message().find(where) != std::string_view::npos);
  CHECK(is.message().find("checksum mismatch") != std::string_view::npos);
  Status vs = (*table)->VerifyAll();
  REQUIRE(vs.IsCorruption());
  CHECK(vs.message().find(where) != std::string_view::npos);

  // Without checksum verification the damage is not reported as a checksum
  // error, but reads never crash.
  TableOptions lax;
  lax.verify_checksums = false;
  auto lax_table = OpenTable(path, lax);
  REQUIRE(lax_table.has_value());
  auto lit = (*lax_table)->NewIterator();
  for (lit->SeekToFirst(); lit->Valid(); lit->Next()) {
  }
  CHECK((*lax_table)->VerifyAll().IsCorruption());  // VerifyAll always checks
}

TEST_CASE("Table: every single flipped byte is caught by Open or VerifyAll") {
  ScratchDir dir;
  const std::string path = dir.File("t.sst");
  KV kv;
  for (int i = 0; i < 300; i++) kv[KeyOf(i)] = ValueOf(i);
  TableOptions opts;
  opts.block_size = 512;
  const uint64_t size = BuildTable(path, kv, opts);
  Random rnd(11);
  for (int trial = 0; trial < 300; trial++) {
    const uint64_t off = trial < 64 ? size - 1 - static_cast<uint64_t>(trial) : rnd.Uniform(size);
    FlipByte(path, off);
    auto table = OpenTable(path, opts);
    Status s = table.has_value() ? (*table)->VerifyAll() : table.error();
    INFO("flipped byte at " << off << ": " << s.ToString());
    CHECK(s.IsCorruption());
    CHECK(s.message().find(path) != std::string_view::npos);
    FlipByte(path, off);  // restore
  }
  auto table = OpenTable(path, opts);
  REQUIRE(table.has_value());
  CHECK((*table)->VerifyAll().ok());
}

TEST_CASE("Table: truncated and garbage files are rejected at Open") {
  ScratchDir dir;
  const std::string path = dir.File("t.sst");
  KV kv;
  for (int i = 0; i < 1000; i++) kv[KeyOf(i)] = ValueOf(i);
  const uint64_t size = BuildTable(path, kv);
  auto whole = ReadFileToString(DefaultFileSystem(), path);
  REQUIRE(whole.has_value());

  for (uint64_t cut : {uint64_t{0}, uint64_t{1}, uint64_t{63}, uint64_t{64}, size / 2, size - 65, size - 1}) {
    const std::string p = dir.File("cut-" + std::to_string(cut));
    REQUIRE(WriteFileAtomic(DefaultFileSystem(), p, Slice(whole->data(), cut)).ok());
    auto table = OpenTable(p);
    INFO("truncated to " << cut);
    REQUIRE_FALSE(table.has_value());
    CHECK(table.error().IsCorruption());
    CHECK(table.error().message().find(p) != std::string_view::npos);
  }

  Random rnd(5);
  for (int trial = 0; trial < 200; trial++) {
    std::string junk(rnd.Uniform(3 * 4096), '\0');
    for (auto& c : junk) c = static_cast<char>(rnd.Next());
    // Half the time keep a valid footer magic so deeper checks run.
    if (trial % 2 == 1 && junk.size() >= 64) junk.replace(junk.size() - 8, 8, whole->substr(whole->size() - 8));
    const std::string p = dir.File("junk");
    REQUIRE(WriteFileAtomic(DefaultFileSystem(), p, junk).ok());
    auto table = OpenTable(p);
    REQUIRE_FALSE(table.has_value());
    CHECK(table.error().IsCorruption());
  }
}

TEST_CASE("Table: data blocks go through the block cache when one is set") {
  ScratchDir dir;
  BlockCache cache(8 << 20);
  TableOptions opts;
  opts.block_cache = &cache;
  const KV kv = TenThousand();
  BuildTable(dir.File("t.sst"), kv, opts);
  auto table = OpenTable(dir.File("t.sst"), opts, /*id=*/42);
  REQUIRE(table.has_value());
  auto noop = [](const Slice&, const Slice&) {};
  REQUIRE((*table)->Get(KeyOf(100), noop).ok());
  CHECK(cache.Misses() == 1);
  CHECK(cache.Hits() == 0);
  REQUIRE((*table)->Get(KeyOf(102), noop).ok());  // same block
  CHECK(cache.Hits() == 1);
  // A scan that does not fill the cache leaves usage alone.
  size_t usage = cache.Usage();
  auto it = (*table)->NewIterator(/*fill_cache=*/false);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
  }
  CHECK(cache.Usage() == usage);
  auto fill = (*table)->NewIterator(true);
  for (fill->SeekToFirst(); fill->Valid(); fill->Next()) {
  }
  CHECK(cache.Usage() > usage);
  cache.EraseTable(42);
  CHECK(cache.Usage() == 0);
}

TEST_CASE("Table: read errors from the file layer surface from Get and iterators") {
  ScratchDir dir;
  const KV kv = TenThousand();
  BuildTable(dir.File("t.sst"), kv);
  FaultInjectionFileSystem fs(DefaultFileSystem());
  auto file = fs.NewRandomAccessFile(dir.File("t.sst"));
  REQUIRE(file.has_value());
  auto size = fs.GetFileSize(dir.File("t.sst"));
  REQUIRE(size.has_value());
  auto table = Table::Open(TableOptions{}, std::move(*file), *size, 1);
  REQUIRE(table.has_value());
  fs.FailAfter(FaultOp::kRead, 0, EIO);
  Status s = (*table)->Get(KeyOf(500), [](const Slice&, const Slice&) {});
  CHECK(s.IsIOError());
  CHECK(s.message().find(dir.File("t.sst")) != std::string_view::npos);
  auto it = (*table)->NewIterator();
  it->SeekToFirst();
  CHECK_FALSE(it->Valid());
  CHECK(it->status().IsIOError());
  fs.ClearFaults();
  it->SeekToFirst();
  CHECK_FALSE(it->Valid());  // an iterator that failed stays failed
  auto fresh = (*table)->NewIterator();
  fresh->SeekToFirst();
  CHECK(fresh->Valid());
}

TEST_CASE("Table: reads through O_DIRECT files give the same answers") {
  ScratchDir dir;
  KV kv;
  for (int i = 0; i < 3000; i++) kv[KeyOf(i)] = ValueOf(i);
  FileOptions direct;
  direct.direct_io = true;
  {
    auto file = DefaultFileSystem()->NewWritableFile(dir.File("d.sst"), direct);
    REQUIRE(file.has_value());
    TableBuilder builder(TableOptions{}, file->get());
    for (const auto& [k, v] : kv) builder.Add(k, v);
    REQUIRE(builder.Finish().ok());
    REQUIRE((*file)->Sync().ok());
    REQUIRE((*file)->Close().ok());
    auto size = DefaultFileSystem()->GetFileSize(dir.File("d.sst"));
    REQUIRE(size.has_value());
    CHECK(*size == builder.FileSize());
  }
  auto file = DefaultFileSystem()->NewRandomAccessFile(dir.File("d.sst"), direct);
  REQUIRE(file.has_value());
  auto size = DefaultFileSystem()->GetFileSize(dir.File("d.sst"));
  REQUIRE(size.has_value());
  auto table = Table::Open(TableOptions{}, std::move(*file), *size, 1);
  REQUIRE(table.has_value());
  CHECK((*table)->VerifyAll().ok());
  std::string value;
  REQUIRE((*table)->Get(KeyOf(1234), [&](const Slice&, const Slice& v) { value = v.ToString(); }).ok());
  CHECK(value == ValueOf(1234));
}

TEST_CASE("Table: after Open a Get reads one data block, and none when the pinned filter rules the key out") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  KV kv;
  for (int i = 0; i < 5000; i++) kv[KeyOf(i * 2)] = std::string(300, 'a' + i % 26);
  const uint64_t size = BuildTable(dir.File("t.sst"), kv);
  FileOptions fo;
  fo.pread_single_reads = true;  // as kvcore opens its tables
  auto file = fs->NewRandomAccessFile(dir.File("t.sst"), fo);
  REQUIRE(file.has_value());
  auto table = Table::Open(TableOptions{}, std::move(*file), size, 1);
  REQUIRE(table.has_value());
  REQUIRE((*table)->properties().num_data_blocks > 100);
  // Open read the footer, properties, index and filter; Gets never read them again.
  const uint64_t after_open = fs->GetStats().read_ops;
  for (int i = 0; i < 200; i++) {
    const std::string key = KeyOf(i * 50);
    std::string got_key, got_value;
    REQUIRE((*table)->Get(key, [&](const Slice& k, const Slice& v) {
      got_key = k.ToString();
      got_value = v.ToString();
    }).ok());
    CHECK(got_key == key);
    CHECK(got_value == kv[key]);
  }
  CHECK(fs->GetStats().read_ops == after_open + 200);
  // Absent keys the filter rejects cost no read at all.
  int rejected = 0;
  const uint64_t before_absent = fs->GetStats().read_ops;
  for (int i = 0; i < 1000; i++) {
    const std::string absent = KeyOf(i * 2 + 1);
    if ((*table)->KeyMayMatch(absent)) continue;
    rejected++;
    CHECK((*table)->Get(absent, [](const Slice&, const Slice&) {}).IsNotFound());
  }
  CHECK(rejected > 950);
  CHECK(fs->GetStats().read_ops == before_absent);
}

TEST_CASE("Table: blocks of pointers are kept by the table once read, within the budget, and read once") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  // Short values ("p...") are pointers, long ones ("v...") are not: keys
  // 0-2999 have pointers only, 3000-3999 long values, so the last blocks
  // hold no pointer at all.
  KV kv;
  for (int i = 0; i < 4000; i++) kv[KeyOf(i)] = i < 3000 ? "p" + std::to_string(i) : "v" + std::string(200, 'x');
  const uint64_t size = BuildTable(dir.File("t.sst"), kv);
  BlockCache cache(8 << 20);
  PinnedBlockBudget budget(1 << 20);
  TableOptions opts;
  opts.block_cache = &cache;
  opts.pin_budget = &budget;
  opts.pin_entry = [](const Slice&, const Slice& v) { return !v.empty() && v[0] == 'p'; };
  FileOptions fo;
  fo.pread_single_reads = true;
  auto open = [&]() {
    auto file = fs->NewRandomAccessFile(dir.File("t.sst"), fo);
    REQUIRE(file.has_value());
    auto t = Table::Open(opts, std::move(*file), size, 7);
    REQUIRE(t.has_value());
    return std::move(*t);
  };
  auto get = [](const Table& t, int i) {
    std::string value;
    REQUIRE(t.Get(KeyOf(i), [&](const Slice&, const Slice& v) { value = v.ToString(); }).ok());
    return value;
  };
  {
    auto table = open();
    REQUIRE(table->properties().num_data_blocks > 10);
    // Every key of the pointer part, twice: each block read once, then kept.
    const uint64_t before = fs->GetStats().read_ops;
    for (int pass = 0; pass < 2; pass++) {
      for (int i = 0; i < 3000; i++) REQUIRE(get(*table, i) == kv[KeyOf(i)]);
    }
    const uint64_t reads = fs->GetStats().read_ops - before;
    CHECK(reads > 0);
    CHECK(table->PinnedBytes() > 0);
    CHECK(budget.Used() == table->PinnedBytes());
    // The kept blocks are not in the block cache (the block holding both
    // kinds of entries, at the boundary, is).
    CHECK(cache.Usage() <= 4096 + 64);
    const uint64_t kept = table->PinnedBytes();
    // A long-value key goes through the block cache and is never kept.
    REQUIRE(get(*table, 3500) == kv[KeyOf(3500)]);
    REQUIRE(get(*table, 3500) == kv[KeyOf(3500)]);
    CHECK(cache.Hits() >= 1);
    CHECK(table->PinnedBytes() == kept);
    // Iterators see the kept blocks too, and a scan that does not fill the
    // cache keeps nothing new.
    auto it = table->NewIterator(/*fill_cache=*/false);
    int n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      REQUIRE(it->value() == Slice(kv[it->key().ToString()]));
      n++;
    }
    REQUIRE(it->status().ok());
    CHECK(n == 4000);
    CHECK(table->PinnedBytes() == kept);
    // VerifyAll reads the file, not the kept copies (two blocks are in the
    // block cache: the boundary one and 3500's).
    const uint64_t before_verify = fs->GetStats().read_ops;
    CHECK(table->VerifyAll().ok());
    CHECK(fs->GetStats().read_ops - before_verify == table->properties().num_data_blocks - 2);
    // Closing the table gives the bytes back.
  }
  CHECK(budget.Used() == 0);
  {
    // A budget too small for every block keeps what fits and reads the rest
    // through the cache, with the same answers.
    PinnedBlockBudget small(6000);
    opts.pin_budget = &small;
    auto table = open();
    for (int pass = 0; pass < 2; pass++) {
      for (int i = 0; i < 4000; i += 7) REQUIRE(get(*table, i) == kv[KeyOf(i)]);
    }
    CHECK(small.Used() > 0);
    CHECK(small.Used() <= 6000);
    CHECK(table->PinnedBytes() == small.Used());
  }
}

TEST_CASE("Table: a Get through the index keys' summaries finds what the index search finds") {
  ScratchDir dir;
  // Many blocks; keys below 1000 share their first 8 bytes ("key00000"),
  // so their summaries tie and whole keys decide.
  TableOptions opts;
  opts.block_size = 256;
  const KV kv = TenThousand();
  BuildTable(dir.File("t.sst"), kv, opts);
  TableOptions with = opts;
  int calls = 0;
  with.key_prefix = [&calls](const Slice& k, uint64_t* p) {
    calls++;
    *p = BigEndianPrefix64(k);
    return true;
  };
  // Every summary the same (keys sharing their first 8 bytes over a whole
  // table): whole keys decide across the index, by a binary search too, so
  // a Get's key compares (index and data block) grow with the log of the
  // table's blocks, not with their number.
  struct CountingComparator final : Comparator {
    mutable uint64_t compares = 0;
    int Compare(const Slice& a, const Slice& b) const override {
      compares++;
      return BytewiseComparator()->Compare(a, b);
    }
    const char* Name() const override { return BytewiseComparator()->Name(); }
    void FindShortestSeparator(std::string* start, const Slice& limit) const override {
      BytewiseComparator()->FindShortestSeparator(start, limit);
    }
    void FindShortSuccessor(std::string* key) const override { BytewiseComparator()->FindShortSuccessor(key); }
  } counting;
  TableOptions all_tied = opts;
  all_tied.comparator = &counting;
  all_tied.key_prefix = [](const Slice&, uint64_t* p) {
    *p = 7;
    return true;
  };
  auto plain = OpenTable(dir.File("t.sst"), opts);
  auto summarized = OpenTable(dir.File("t.sst"), with);
  auto tied = OpenTable(dir.File("t.sst"), all_tied);
  REQUIRE(plain.has_value());
  REQUIRE(summarized.has_value());
  REQUIRE(tied.has_value());
  REQUIRE((*summarized)->properties().num_data_blocks > 100);
  CHECK(calls == static_cast<int>((*summarized)->properties().num_data_blocks));  // Open summarized the index
  auto get = [](const Table& t, const std::string& key) {
    std::string found;
    Status s = t.Get(key, [&](const Slice& k, const Slice&) { found = k.ToString(); });
    REQUIRE((s.ok() || s.IsNotFound()));
    return s.ok() ? found : std::string("<none>");
  };
  std::vector<std::string> targets = {"", "a", "key", "key0", "key00000", "zzz", KeyOf(19998) + "x"};
  for (int i = 0; i < 20002; i += 1) targets.push_back(KeyOf(i));
  for (int i = 0; i < 2000; i += 37) targets.push_back(KeyOf(i) + std::string(1, '\0'));
  counting.compares = 0;  // Open's own compares aside
  uint64_t gets = 0;
  for (const std::string& t : targets) {
    auto it = kv.lower_bound(t);
    const std::string want = it == kv.end() ? "<none>" : it->first;
    INFO("target " << Slice(t).ToEscaped());
    // The bloom filter answers for absent keys before the index in all three.
    if (!(*plain)->KeyMayMatch(t)) continue;
    CHECK(get(**summarized, t) == want);
    CHECK(get(**plain, t) == want);
    CHECK(get(**tied, t) == want);
    gets++;
  }
  const uint64_t blocks = (*tied)->properties().num_data_blocks;
  INFO(counting.compares << " key compares in " << gets << " Gets over " << blocks << " blocks");
  REQUIRE(gets > 0);
  CHECK(counting.compares / gets < std::bit_width(blocks) + 40);
  // A key_prefix without a summary for a key: that Get searches the index.
  with.key_prefix = [](const Slice& k, uint64_t* p) {
    *p = 0;
    return k.size() != 3;
  };
  auto partial = OpenTable(dir.File("t.sst"), with);
  REQUIRE(partial.has_value());
  CHECK(get(**partial, KeyOf(500)) == KeyOf(500));
}

TEST_CASE("Table: readers racing to keep the same blocks all get the right entries, each block kept once") {
  ScratchDir dir;
  KV kv;
  for (int i = 0; i < 3000; i++) kv[KeyOf(i)] = "p" + std::to_string(i);
  TableOptions opts;
  opts.block_size = 512;
  const uint64_t size = BuildTable(dir.File("t.sst"), kv, opts);
  BlockCache cache(1 << 20);
  PinnedBlockBudget budget(1 << 20);
  opts.block_cache = &cache;
  opts.pin_budget = &budget;
  opts.pin_entry = [](const Slice&, const Slice& v) { return !v.empty() && v[0] == 'p'; };
  auto file = DefaultFileSystem()->NewRandomAccessFile(dir.File("t.sst"));
  REQUIRE(file.has_value());
  auto table = Table::Open(opts, std::move(*file), size, 3);
  REQUIRE(table.has_value());
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; t++) {
    readers.emplace_back([&, t] {
      for (int round = 0; round < 3; round++) {
        for (int i = t; i < 3000; i += 3) {
          std::string value;
          Status s = (*table)->Get(KeyOf(i), [&](const Slice&, const Slice& v) { value = v.ToString(); });
          if (!s.ok() || value != kv.at(KeyOf(i))) wrong++;
        }
        auto it = (*table)->NewIterator();
        int n = 0;
        for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
        if (n != 3000 || !it->status().ok()) wrong++;
      }
    });
  }
  for (auto& r : readers) r.join();
  CHECK(wrong == 0);
  // Every block is kept, once: the budget holds exactly the table's bytes.
  CHECK((*table)->PinnedBytes() > 0);
  CHECK(budget.Used() == (*table)->PinnedBytes());
  CHECK(cache.Usage() == 0);
  table->reset();
  CHECK(budget.Used() == 0);
}
