// make_fuzz_corpus: writes the seed corpus of every fuzz target from the
// real writers (TableBuilder, BlockBuilder, BlobFileBuilder, RowTableBuilder, Pool::Create +
// PmWal::Append + MatrixContainer::AddRow, LogWriter, VersionEdit::EncodeTo,
// WriteBatch, EncodeSuperblock, EncodeInodeAttr), in the input format of
// each target (fuzz_util.h: a flags byte, then the payload).
//
//   make_fuzz_corpus DIR     writes DIR/<target>/seed-<what>
//
// Small on purpose: the whole corpus stays well under 1 MB.
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/cli_util.h"
#include "fuse/schema.h"
#include "fuse/superblock.h"
#include "kvcore/dbformat.h"
#include "kvcore/include/write_batch.h"
#include "kvcore/log_writer.h"
#include "kvcore/version_edit.h"
#include "nvm/matrix_container.h"
#include "nvm/pm_wal.h"
#include "nvm/pool.h"
#include "nvm/row_table.h"
#include "ssd/blob_file.h"
#include "ssd/block_builder.h"
#include "ssd/file_system.h"
#include "ssd/table.h"
#include "tests/fuzz/drivers_nvm.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/nvm/nvm_test_util.h"

namespace mxfs::fuzz {
namespace {

std::string g_dir;
int g_failures = 0;

void Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "make_fuzz_corpus: %s: %s\n", what.c_str(), s.ToString().c_str());
  g_failures++;
}

void Seed(const std::string& target, const std::string& name, uint8_t flags, const std::string& payload) {
  std::string dir = g_dir + "/" + target;
  ::mkdir(dir.c_str(), 0755);
  std::string path = dir + "/seed-" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::fprintf(stderr, "make_fuzz_corpus: cannot write %s\n", path.c_str());
    g_failures++;
    return;
  }
  std::fputc(flags, f);
  std::fwrite(payload.data(), 1, payload.size(), f);
  std::fclose(f);
}

std::vector<std::pair<std::string, std::string>> Kv(int n, const std::string& tag, int stride = 1) {
  std::vector<std::pair<std::string, std::string>> kv;
  for (int i = 0; i < n; i++) {
    char k[32];
    std::snprintf(k, sizeof(k), "key%05d", i * stride);
    kv.emplace_back(k, tag + std::string(i % 7 * 3, 'v'));
  }
  return kv;
}

// An SSTable through the real file layer (written to /tmp, read back).
std::string BuildTable(int n, size_t block_size, int bloom_bits) {
  std::string path = "/tmp/mxfs-fuzz-corpus-" + std::to_string(::getpid()) + ".sst";
  FileSystem* fs = DefaultFileSystem();
  auto f = fs->NewWritableFile(path);
  if (!f) {
    Fail("table file", f.error());
    return "";
  }
  TableOptions o;
  o.block_size = block_size;
  o.block_restart_interval = 4;
  o.bloom_bits_per_key = bloom_bits;
  TableBuilder b(o, f->get());
  for (auto& [k, v] : Kv(n, "t")) b.Add(k, v);
  Status s = b.Finish();
  if (s.ok()) s = (*f)->Close();
  if (!s.ok()) Fail("table", s);
  auto data = ReadFileToString(fs, path);
  fs->RemoveFile(path).IgnoreError();
  if (!data) {
    Fail("read table", data.error());
    return "";
  }
  return *data;
}

void TableSeeds() {
  std::string t = BuildTable(60, 256, 10);
  Seed("table", "60keys-fix", kFixChecksums, t);
  Seed("table", "60keys-verify", kFixChecksums | 2, t);
  Seed("table", "60keys-cache", kFixChecksums | 2 | 4, t);
  Seed("table", "5keys-nofilter", kFixChecksums | 2, BuildTable(5, 4096, 0));
  Seed("table", "1key-raw", 0, BuildTable(1, 4096, 10));
}

void BlockSeeds() {
  for (int restart : {1, 4, 16}) {
    BlockBuilder b(restart);
    for (auto& [k, v] : Kv(40, "b")) b.Add(k, v);
    Seed("block", "40keys-restart" + std::to_string(restart), 0, b.Finish().ToString());
  }
}

// A blob file through the real file layer (written to /tmp, read back).
std::string BuildBlob(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string path = "/tmp/mxfs-fuzz-corpus-" + std::to_string(::getpid()) + ".blob";
  FileSystem* fs = DefaultFileSystem();
  auto f = fs->NewWritableFile(path);
  if (!f) {
    Fail("blob file", f.error());
    return "";
  }
  BlobFileBuilder b(f->get());
  Status s;
  uint64_t offset = 0;
  for (auto& [k, v] : kv) {
    if (s.ok()) s = b.Add(k, v, &offset);
  }
  if (s.ok()) s = b.Finish();
  if (s.ok()) s = (*f)->Close();
  if (!s.ok()) Fail("blob", s);
  auto data = ReadFileToString(fs, path);
  fs->RemoveFile(path).IgnoreError();
  if (!data) {
    Fail("read blob", data.error());
    return "";
  }
  return *data;
}

void BlobSeeds() {
  Seed("blob", "empty", kFixChecksums, BuildBlob({}));
  Seed("blob", "20records-fix", kFixChecksums, BuildBlob(Kv(20, "blob")));
  Seed("blob", "20records-counts", kFixChecksums | 2, BuildBlob(Kv(20, "blob")));
  Seed("blob", "5records-raw", 0, BuildBlob(Kv(5, "raw")));
  // An empty key, an empty value, a 1-byte key and a value of a few KiB.
  Seed("blob", "edge-sizes", kFixChecksums,
       BuildBlob({{"", "value under the empty key"}, {"k", ""}, {"key2", std::string(3000, 'v')}, {"", ""}}));
}

void RowTableSeeds() {
  RowTableBuilder small(BytewiseComparator());
  for (auto& [k, v] : Kv(20, "r")) small.Add(k, v);
  auto img = small.Finish(7, nullptr);
  if (!img) return Fail("row", img.error());
  Seed("row_table", "20keys", kFixChecksums, *img);
  Seed("row_table", "20keys-live-half", kFixChecksums | 2, *img);
  // A row whose data spans several pages.
  RowTableBuilder big(BytewiseComparator());
  for (auto& [k, v] : Kv(30, std::string(300, 'x'))) big.Add(k, v);
  auto img2 = big.Finish(9, nullptr);
  if (!img2) return Fail("row", img2.error());
  Seed("row_table", "30keys-3pages", kFixChecksums, *img2);
}

std::string BatchRep(int first, int n, bool with_delete) {
  WriteBatch b;
  for (auto& [k, v] : Kv(n, "w", 3)) b.Put(k + std::to_string(first), v);
  if (with_delete) b.Delete("key00000");
  b.SetSequence(static_cast<uint64_t>(first));
  return b.Rep();
}

// A pool with WAL records (enough to wrap into a second segment) and three
// container rows, two of them in the compactor with a column compacted.
void PoolSeeds() {
  AnonymousFile file("/dev/shm");
  auto pool = Pool::Create(file.path(), FuzzPoolOptions());
  if (!pool) return Fail("pool", pool.error());
  Pool* p = pool->get();
  Status s = PmWal::Format(p, kFuzzWalSegment);
  if (!s.ok()) return Fail("wal format", s);
  s = MatrixContainer::Format(p);
  if (!s.ok()) return Fail("container format", s);
  const PoolHeader& h = p->header();
  {
    auto wal = PmWal::Open(p);
    if (!wal) return Fail("wal open", wal.error());
    for (int i = 1; i <= 12; i++) {
      s = (*wal)->Append(static_cast<uint64_t>(i), BatchRep(i, 1 + i % 5, i % 3 == 0));
      if (!s.ok()) return Fail("wal append", s);
    }
  }
  Seed("pm_wal", "12records", kFixChecksums, MakeSparseImage(p->At(h.wal_offset), h.wal_size));
  {
    ContainerOptions o;
    auto c = MatrixContainer::Open(p, o);
    if (!c) return Fail("container open", c.error());
    for (int r = 0; r < 2; r++) {
      testing::VectorIterator it(Kv(12, "row" + std::to_string(r), 2 + r));
      auto id = (*c)->AddRow(&it);
      if (!id) return Fail("add row", id.error());
    }
    auto sw = (*c)->SwitchReceiverToCompactor();
    if (!sw) return Fail("switch", sw.error());
    s = (*c)->MarkColumnCompacted("key00010");
    if (!s.ok()) return Fail("column compaction", s);
    testing::VectorIterator it(Kv(8, "recv", 5));
    auto id = (*c)->AddRow(&it);
    if (!id) return Fail("add row", id.error());
  }
  Seed("container", "3rows-compacted", kFixChecksums,
       MakeSparseImage(p->At(h.container_offset), h.container_size));
  Seed("pool", "wal-and-3rows", kFixChecksums, MakeSparseImage(p->base(), kFuzzPoolSize));
  // An empty but formatted pool too.
  auto empty = Pool::Create(file.path(), FuzzPoolOptions());
  if (!empty) return Fail("pool", empty.error());
  s = PmWal::Format(empty->get(), kFuzzWalSegment);
  if (s.ok()) s = MatrixContainer::Format(empty->get());
  if (!s.ok()) return Fail("format", s);
  Seed("pool", "empty", kFixChecksums, MakeSparseImage((*empty)->base(), kFuzzPoolSize));
}

std::string EditRep(int i) {
  VersionEdit e;
  if (i == 0) e.SetComparatorName("mxfs.InternalKeyComparator");
  e.SetLogNumber(3 + i);
  e.SetNextFile(10 + i);
  e.SetLastSequence(100 + i);
  FileMetaData f;
  f.number = 7 + i;
  f.file_size = 4096;
  f.smallest = InternalKey("apple", 5, kTypeValue);
  f.largest = InternalKey("pear", 9, kTypeDeletion);
  f.smallest_seq = 5;
  f.largest_seq = 9;
  e.AddFile(1 + i % 3, f);
  if (i > 0) e.RemoveFile(1, 6 + i);
  e.SetCompactPointer(2, InternalKey("m", 3, kTypeValue));
  if (i == 2) e.SetLevel0State(std::string("\x01\x02\x03", 3));
  std::string rep;
  e.EncodeTo(&rep);
  return rep;
}

// A compaction's edit with key-value separation: a new blob file (tag 9)
// and garbage counted in two older ones (tag 10).
std::string BlobEditRep() {
  VersionEdit e;
  e.SetLogNumber(4);
  e.SetNextFile(30);
  e.SetLastSequence(500);
  FileMetaData f;
  f.number = 28;
  f.file_size = 2048;
  f.smallest = InternalKey("apple", 400, kTypeBlobIndex);
  f.largest = InternalKey("pear", 450, kTypeBlobIndex);
  f.smallest_seq = 400;
  f.largest_seq = 450;
  e.AddFile(2, f);
  e.RemoveFile(1, 20);
  e.AddBlobFile(BlobFileMeta{29, 1 << 20, 250, (1 << 20) - 40});
  e.AddBlobGarbage(12, BlobGarbage{3, 12345});
  e.AddBlobGarbage(17, BlobGarbage{250, (1 << 20) - 40});
  std::string rep;
  e.EncodeTo(&rep);
  return rep;
}

void KvcoreSeeds() {
  for (int i = 0; i < 3; i++) Seed("version_edit", "edit" + std::to_string(i), 0, EditRep(i));
  Seed("version_edit", "edit-blob", 0, BlobEditRep());
  Seed("write_batch", "puts", 0, BatchRep(1, 5, false));
  Seed("write_batch", "puts-delete", 0, BatchRep(40, 3, true));
  // A log file holding MANIFEST records, and one holding WAL records.
  for (int kind = 0; kind < 2; kind++) {
    std::string path = "/tmp/mxfs-fuzz-corpus-" + std::to_string(::getpid()) + ".log";
    FileSystem* fs = DefaultFileSystem();
    auto f = fs->NewWritableFile(path);
    if (!f) return Fail("log file", f.error());
    {
      LogWriter w(std::move(*f));
      for (int i = 0; i < 3; i++) {
        Status s = w.AddRecord(kind == 0 ? EditRep(i) : BatchRep(i * 10 + 1, 2 + i, i == 1), false);
        if (!s.ok()) return Fail("log append", s);
      }
      Status s = w.Close();
      if (!s.ok()) return Fail("log close", s);
    }
    auto data = ReadFileToString(fs, path);
    fs->RemoveFile(path).IgnoreError();
    if (!data) return Fail("read log", data.error());
    Seed("log_reader", kind == 0 ? "manifest" : "wal", kFixChecksums, *data);
  }
}

void FuseSeeds() {
  Superblock sb = Superblock::New();
  sb.label = "fuzz";
  Seed("superblock", "default", kFixChecksums, EncodeSuperblock(sb));
  sb.pool_path = "/dev/shm/matrixfs.pool";
  sb.pool_size = 64 << 20;
  sb.block_size = 8192;
  Seed("superblock", "with-pool", kFixChecksums, EncodeSuperblock(sb));

  auto schema = [](const std::string& name, const std::string& key, const std::string& value) {
    Seed("schema", name, 0, std::string(1, static_cast<char>(key.size())) + key + value);
  };
  InodeAttr a;
  a.mode = 0100644;
  a.nlink = 1;
  a.size = 12345;
  a.generation = 3;
  a.parent = 1;
  schema("inode-file", InodeKey(17), EncodeInodeAttr(a));
  a.mode = 0120777;
  a.symlink = "../target/of/the/link";
  schema("inode-symlink", InodeKey(18), EncodeInodeAttr(a));
  schema("dentry", DentryKey(1, "hello.txt"), EncodeDirEntry(DirEntry{17, 8}));
  schema("block", BlockKey(17, 2), std::string(40, 'd'));
  schema("xattr", XattrKey(17, "user.note"), "value");
}

}  // namespace
}  // namespace mxfs::fuzz

int main(int argc, char** argv) {
  const mxfs::Cli cli("make_fuzz_corpus",
                      "usage: make_fuzz_corpus DIR\n"
                      "  writes the seed corpus of every fuzz target into DIR/<target>/seed-*\n"
                      "  -h, --help  this text\n");
  cli.HelpIfAsked(argc, argv);
  const std::string dir = cli.Operands(argc, argv, 1, 1, "DIR")[0];
  mxfs::fuzz::g_dir = dir;
  ::mkdir(dir.c_str(), 0755);
  mxfs::fuzz::TableSeeds();
  mxfs::fuzz::BlockSeeds();
  mxfs::fuzz::BlobSeeds();
  mxfs::fuzz::RowTableSeeds();
  mxfs::fuzz::PoolSeeds();
  mxfs::fuzz::KvcoreSeeds();
  mxfs::fuzz::FuseSeeds();
  return mxfs::fuzz::g_failures == 0 ? 0 : 1;
}
