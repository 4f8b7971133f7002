// mxfs-inject: damages an unmounted MatrixFS instance on purpose, so tests
// can check that fsck.matrixfs finds (and where it can, repairs) each kind
// of damage and that the daemon refuses or degrades instead of crashing.
//
//   mxfs-inject flush DATADIR            write the memtable into an SSTable (no damage)
//   mxfs-inject sst DATADIR              flip a byte in the first data block of the newest SSTable
//   mxfs-inject manifest DATADIR         flip a byte in the first record of the live MANIFEST
//   mxfs-inject wal DATADIR              flip a byte in the first record of the newest SSD WAL
//   mxfs-inject del-inode DATADIR PATH   delete the inode key of PATH, leaving its dentry
//   mxfs-inject dangling DATADIR NAME    add /NAME naming an inode that does not exist
//   mxfs-inject bump-nlink DATADIR PATH  add one to PATH's nlink
//   mxfs-inject pm-wal DATADIR           flip a byte in the oldest record of the pool's WAL (exit 3: no pool/record)
//   mxfs-inject rowtable DATADIR         flip a metadata byte of the first committed RowTable (exit 3: none)
//   mxfs-inject row-order DATADIR        swap the keys of entries 0 and 1 of the first committed one-extent
//                                        RowTable and fix its metadata checksum: only the key order is wrong
//   mxfs-inject foreign-pool DATADIR     give the pool header (both copies, checksums fixed) a new random
//                                        UUID, as if the pool belonged to another instance
//
// Prints what it changed (file and offset, or key). Exit 0 done, 1 error,
// 2 usage, 3 not applicable.
//
// Thread-safety: a single-threaded program.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/cli_util.h"
#include "base/coding.h"
#include "base/hash.h"
#include "fuse/schema.h"
#include "fuse/superblock.h"
#include "kvcore/filename.h"
#include "kvcore/include/db.h"
#include "nvm/pool.h"

namespace mxfs {
namespace {

int Fail(const std::string& msg) {
  std::fprintf(stderr, "mxfs-inject: %s\n", msg.c_str());
  return 1;
}

// The file in kv/ of type t with the highest number, or "".
std::string Newest(const std::string& datadir, FileType want) {
  const std::string kv = KvPath(datadir);
  DIR* d = ::opendir(kv.c_str());
  if (d == nullptr) return "";
  uint64_t best = 0;
  std::string found;
  while (struct dirent* de = ::readdir(d)) {
    uint64_t n;
    FileType t;
    if (ParseFileName(de->d_name, &n, &t) && t == want && (found.empty() || n > best)) {
      best = n;
      found = kv + "/" + de->d_name;
    }
  }
  ::closedir(d);
  return found;
}

int Flip(const std::string& path, off_t offset) {
  if (path.empty()) return Fail("no such file to damage");
  int fd = ::open(path.c_str(), O_RDWR);
  if (fd < 0) return Fail("cannot open " + path);
  unsigned char c;
  if (::pread(fd, &c, 1, offset) != 1) {
    ::close(fd);
    return Fail(path + " is shorter than " + std::to_string(offset + 1) + " bytes");
  }
  c ^= 0x5a;
  bool ok = ::pwrite(fd, &c, 1, offset) == 1 && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Fail("cannot write " + path);
  std::printf("flipped byte %lld of %s\n", static_cast<long long>(offset), path.c_str());
  return 0;
}

// Flips a payload byte of the oldest committed record of the pool's WAL
// (layout in nvm/pm_wal.h): the head word names its logical position.
int FlipPmWal(const std::string& datadir) {
  auto sb = ReadSuperblock(datadir);
  if (!sb) return Fail(sb.error().ToString());
  if (sb->pool_path.empty()) {
    std::fprintf(stderr, "mxfs-inject: pm-wal: %s has no pool\n", datadir.c_str());
    return 3;
  }
  uint64_t wal_offset;
  {
    auto pool = Pool::Open(sb->pool_path);
    if (!pool) return Fail(pool.error().ToString());
    wal_offset = (*pool)->header().wal_offset;
  }
  int fd = ::open(sb->pool_path.c_str(), O_RDWR);
  if (fd < 0) return Fail("cannot open " + sb->pool_path);
  char hdr[136];
  if (::pread(fd, hdr, sizeof(hdr), static_cast<off_t>(wal_offset)) != static_cast<ssize_t>(sizeof(hdr))) {
    ::close(fd);
    return Fail("cannot read the WAL header of " + sb->pool_path);
  }
  uint64_t seg_size = DecodeFixed64(hdr + 16), seg_count = DecodeFixed64(hdr + 24);
  uint64_t head = DecodeFixed64(hdr + 64), tail = DecodeFixed64(hdr + 128);
  ::close(fd);
  if (head >= tail || seg_size == 0 || seg_count == 0) {
    std::fprintf(stderr, "mxfs-inject: pm-wal: the log of %s holds no record\n", sb->pool_path.c_str());
    return 3;
  }
  uint64_t phys = 4096 + head % (seg_size * seg_count);
  return Flip(sb->pool_path, static_cast<off_t>(wal_offset + phys + 4));  // the payload length
}

// Flips a byte of the metadata (entry array) of the first committed row of
// the matrix container (layout in man/matrixfs.5, "Matrix container region"
// and "RowTable"): slot i is at region + 53248 + 16 i, its location names
// the row's header data page; data pages start at region + 98304.
int FlipRowTable(const std::string& datadir) {
  auto sb = ReadSuperblock(datadir);
  if (!sb) return Fail(sb.error().ToString());
  if (sb->pool_path.empty()) {
    std::fprintf(stderr, "mxfs-inject: rowtable: %s has no pool\n", datadir.c_str());
    return 3;
  }
  uint64_t region;
  {
    auto pool = Pool::Open(sb->pool_path);
    if (!pool) return Fail(pool.error().ToString());
    region = (*pool)->header().container_offset;
  }
  int fd = ::open(sb->pool_path.c_str(), O_RDONLY);
  if (fd < 0) return Fail("cannot open " + sb->pool_path);
  constexpr uint64_t kSlots = 53248, kNumSlots = 1024, kDataPages = 98304, kPage = 4096;
  char slots[kNumSlots * 16];
  bool ok = ::pread(fd, slots, sizeof(slots), static_cast<off_t>(region + kSlots)) == static_cast<ssize_t>(sizeof(slots));
  ::close(fd);
  if (!ok) return Fail("cannot read the row slots of " + sb->pool_path);
  for (uint64_t i = 0; i < kNumSlots; ++i) {
    uint64_t location = DecodeFixed64(slots + 16 * i);
    uint64_t row_id = DecodeFixed64(slots + 16 * i + 8);
    if (row_id == 0) continue;
    uint64_t header = region + kDataPages + (location & 0xffffffffull) * kPage;
    std::printf("row %llu (slot %llu) at pool offset %llu\n", static_cast<unsigned long long>(row_id),
                static_cast<unsigned long long>(i), static_cast<unsigned long long>(header));
    return Flip(sb->pool_path, static_cast<off_t>(header + kPage + 2));  // first metadata entry
  }
  std::fprintf(stderr, "mxfs-inject: rowtable: the container of %s holds no row\n", sb->pool_path.c_str());
  return 3;
}

// Entries 0 and 1 of the first committed row whose header has no extent
// table (K = 0: metadata contiguous after the header page) swap their key
// fields; the metadata checksum at header + 48 and the header checksum at
// + 124 are recomputed, so the row
// opens and only its key order is wrong.
int SwapRowKeys(const std::string& datadir) {
  auto sb = ReadSuperblock(datadir);
  if (!sb) return Fail(sb.error().ToString());
  if (sb->pool_path.empty()) {
    std::fprintf(stderr, "mxfs-inject: row-order: %s has no pool\n", datadir.c_str());
    return 3;
  }
  auto pool = Pool::Open(sb->pool_path);
  if (!pool) return Fail(pool.error().ToString());
  Pool& p = **pool;
  const uint64_t region = p.header().container_offset;
  constexpr uint64_t kSlots = 53248, kNumSlots = 1024, kDataPages = 98304, kPage = 4096;
  for (uint64_t i = 0; i < kNumSlots; ++i) {
    const char* slot = p.At(region + kSlots + 16 * i);
    uint64_t location = DecodeFixed64(slot);
    uint64_t row_id = DecodeFixed64(slot + 8);
    if (row_id == 0) continue;
    const uint64_t header = region + kDataPages + (location & 0xffffffffull) * kPage;
    char* h = p.At(header);
    const uint32_t n = DecodeFixed32(h + 24), meta_bytes = DecodeFixed32(h + 36);
    if (DecodeFixed32(h + 128) != 0 || n < 2) continue;
    char* meta = h + kPage;
    char tmp[8];
    std::memcpy(tmp, meta, 8);
    std::memcpy(meta, meta + 20, 8);
    std::memcpy(meta + 20, tmp, 8);
    EncodeFixed32(h + 48, Checksum32(meta, meta_bytes));
    EncodeFixed32(h + 124, Checksum32(h, 124));  // the header's own (K = 0: bytes 0..123)
    p.Persist(std::span<char>(h, 2 * kPage));
    std::printf("row %llu (slot %llu) at pool offset %llu: swapped the keys of entries 0 and 1\n",
                static_cast<unsigned long long>(row_id), static_cast<unsigned long long>(i),
                static_cast<unsigned long long>(header));
    return 0;
  }
  std::fprintf(stderr, "mxfs-inject: row-order: the container of %s holds no one-extent row of 2 entries\n",
               sb->pool_path.c_str());
  return 3;
}

// Both header copies get a new random UUID (version 4), checksums fixed.
int ForeignPool(const std::string& datadir) {
  auto sb = ReadSuperblock(datadir);
  if (!sb) return Fail(sb.error().ToString());
  if (sb->pool_path.empty()) {
    std::fprintf(stderr, "mxfs-inject: foreign-pool: %s has no pool\n", datadir.c_str());
    return 3;
  }
  auto pool = Pool::Open(sb->pool_path);
  if (!pool) return Fail(pool.error().ToString());
  PoolHeader h = (*pool)->header();
  const std::string old_uuid = UuidToString(h.uuid);
  std::random_device rd;
  for (auto& b : h.uuid) b = static_cast<uint8_t>(rd());
  h.uuid[6] = static_cast<uint8_t>((h.uuid[6] & 0x0f) | 0x40);
  h.uuid[8] = static_cast<uint8_t>((h.uuid[8] & 0x3f) | 0x80);
  char raw[kPoolHeaderSize];
  EncodePoolHeader(h, raw);
  for (uint64_t off : {uint64_t{0}, uint64_t{kPoolPageSize}}) {
    (*pool)->CopyNoDrain((*pool)->At(off), std::span<const char>(raw));
  }
  (*pool)->Drain();
  std::printf("pool %s: UUID %s replaced by %s (both header copies)\n", sb->pool_path.c_str(), old_uuid.c_str(),
              UuidToString(h.uuid).c_str());
  return 0;
}

Result<std::unique_ptr<DB>> OpenDb(const std::string& datadir) {
  Options o;
  o.create_if_missing = false;
  auto sb = ReadSuperblock(datadir);
  struct stat st;
  if (sb && !sb->pool_path.empty() && ::stat((KvPath(datadir) + "/POOL-IDENTITY").c_str(), &st) == 0) {
    o.nvm_path = sb->pool_path;
    o.nvm_size = sb->pool_size;
  }
  return DB::Open(o, KvPath(datadir));
}

// Resolves an absolute-in-the-filesystem path ("a/b" or "/a/b") to an ino.
Result<uint64_t> Resolve(DB* db, const std::string& path) {
  uint64_t cur = kRootIno;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string::npos) end = path.size();
    std::string name = path.substr(pos, end - pos);
    pos = end + 1;
    if (name.empty()) continue;
    std::string v;
    Status s = db->Get(ReadOptions(), DentryKey(cur, name), &v);
    if (!s.ok()) return Err(s.WithContext("looking up " + name));
    DirEntry e;
    std::string key = DentryKey(cur, name);
    s = DecodeDirEntry(key, v, &e);
    if (!s.ok()) return Err(s);
    cur = e.ino;
  }
  return cur;
}

const Cli kCli("mxfs-inject",
               "usage: mxfs-inject COMMAND DATADIR [PATH|NAME]\n"
               "  flush DATADIR            write the memtable into an SSTable (no damage)\n"
               "  sst DATADIR              flip a byte in the first data block of the newest SSTable\n"
               "  manifest DATADIR         flip a byte in the first record of the live MANIFEST\n"
               "  wal DATADIR              flip a byte in the first record of the newest SSD WAL\n"
               "  del-inode DATADIR PATH   delete the inode key of PATH, leaving its dentry\n"
               "  dangling DATADIR NAME    add /NAME naming an inode that does not exist\n"
               "  bump-nlink DATADIR PATH  add one to PATH's nlink\n"
               "  pm-wal DATADIR           flip a byte in the oldest record of the pool's WAL\n"
               "  rowtable DATADIR         flip a metadata byte of the first committed RowTable\n"
               "  row-order DATADIR        swap the keys of entries 0 and 1 of the first one-extent RowTable\n"
               "  foreign-pool DATADIR     give the pool header a new random UUID\n"
               "exit: 0 done, 1 error, 2 usage, 3 not applicable\n");

int Main(int argc, char** argv) {
  kCli.HelpIfAsked(argc, argv);
  const std::vector<std::string> args = kCli.Operands(argc, argv, 1, -1, "");
  if (args.size() < 2) kCli.Fail(args.empty() ? "missing COMMAND" : "missing DATADIR");
  if (args.size() > 3) kCli.Fail("unexpected argument \"" + args[3] + "\"");
  const std::string cmd = args[0];
  const std::string datadir = args[1];
  const std::string arg = args.size() > 2 ? args[2] : "";
  static const char* const kCommands[] = {"flush",      "sst",     "manifest", "wal",       "del-inode",   "dangling",
                                          "bump-nlink", "pm-wal",  "rowtable", "row-order", "foreign-pool"};
  if (std::find(std::begin(kCommands), std::end(kCommands), cmd) == std::end(kCommands)) {
    kCli.Fail("unknown command \"" + cmd + "\"");
  }
  if (cmd == "sst") return Flip(Newest(datadir, FileType::kTable), 20);
  if (cmd == "manifest") return Flip(Newest(datadir, FileType::kManifest), 12);
  if (cmd == "wal") return Flip(Newest(datadir, FileType::kLog), 12);
  if (cmd == "pm-wal") return FlipPmWal(datadir);
  if (cmd == "rowtable") return FlipRowTable(datadir);
  if (cmd == "row-order") return SwapRowKeys(datadir);
  if (cmd == "foreign-pool") return ForeignPool(datadir);
  auto db = OpenDb(datadir);
  if (!db) return Fail(db.error().ToString());
  WriteOptions wo;
  wo.sync = true;
  Status s;
  if (cmd == "flush") {
    s = (*db)->Flush();
    if (s.ok()) std::printf("flushed\n");
  } else if (cmd == "del-inode" || cmd == "bump-nlink") {
    auto ino = Resolve(db->get(), arg);
    if (!ino) return Fail(ino.error().ToString());
    if (cmd == "del-inode") {
      s = (*db)->Delete(wo, InodeKey(*ino));
      if (s.ok()) std::printf("deleted key %s (inode %llu, %s)\n", Slice(InodeKey(*ino)).ToEscaped().c_str(),
                              static_cast<unsigned long long>(*ino), arg.c_str());
    } else {
      std::string v;
      s = (*db)->Get(ReadOptions(), InodeKey(*ino), &v);
      InodeAttr a;
      if (s.ok()) s = DecodeInodeAttr(*ino, v, &a);
      if (s.ok()) {
        ++a.nlink;
        s = (*db)->Put(wo, InodeKey(*ino), EncodeInodeAttr(a));
        if (s.ok()) std::printf("inode %llu (%s): nlink now %u\n", static_cast<unsigned long long>(*ino), arg.c_str(), a.nlink);
      }
    }
  } else if (cmd == "dangling") {
    if (arg.empty()) return Fail("dangling needs a NAME");
    DirEntry e{0xFFFFFFF0ull, DT_REG};
    s = (*db)->Put(wo, DentryKey(kRootIno, arg), EncodeDirEntry(e));
    if (s.ok()) std::printf("added /%s naming missing inode %llu\n", arg.c_str(), static_cast<unsigned long long>(e.ino));
  } else {
    (void)(*db)->Close();
    kCli.Fail("unknown command \"" + cmd + "\"");
  }
  Status c = (*db)->Close();
  if (!s.ok()) return Fail(s.ToString());
  if (!c.ok()) return Fail(c.ToString());
  return 0;
}

}  // namespace
}  // namespace mxfs

int main(int argc, char** argv) { return mxfs::Main(argc, argv); }
