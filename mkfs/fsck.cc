// fsck: see fsck.h for the checks, the order and the repair policy.
#include "mkfs/fsck.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/coding.h"
#include "fuse/schema.h"
#include "fuse/superblock.h"
#include "kvcore/blob_store.h"
#include "kvcore/dbformat.h"
#include "kvcore/filename.h"
#include "kvcore/include/db.h"
#include "kvcore/log_reader.h"
#include "kvcore/version_edit.h"
#include "base/hash.h"
#include "nvm/matrix_container.h"
#include "nvm/pm_wal.h"
#include "nvm/pool.h"
#include "nvm/row_table.h"
#include "ssd/blob_file.h"
#include "ssd/file_system.h"
#include "ssd/table.h"

namespace mxfs {
namespace {

std::string Hex16(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) == nullptr) return p;
  return buf;
}

// Undoes the octal escapes of /proc/self/mountinfo (\040 for a space).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 2])) && std::isdigit(static_cast<unsigned char>(s[i + 3]))) {
      int v = (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0');
      out.push_back(static_cast<char>(v));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool UsesPool(const std::string& datadir, const Superblock& sb);

// How a problem may be repaired: never, by -p and -y, or by -y only.
enum class Fix { kNever, kPreen, kRepair };

class Checker {
 public:
  Checker(std::string datadir, const FsckOptions& o) : datadir_(std::move(datadir)), o_(o) {}

  FsckResult Run();

 private:
  struct Node {
    InodeAttr a;
    bool orphan = false;   // has an O key
    bool deleted = false;  // reclaimed by this run
    bool dirty = false;    // attributes to rewrite
  };
  struct Dent {
    uint64_t parent;
    std::string name;
    DirEntry e;
    bool live = true;
  };

  bool Allowed(Fix f) const {
    if (f == Fix::kNever) return false;
    if (o_.mode == FsckMode::kRepair) return true;
    return o_.mode == FsckMode::kPreen && f == Fix::kPreen;
  }
  // Reports a problem; returns true when the caller should repair it.
  bool Problem(const std::string& what, Fix fix, const std::string& action = "") {
    ++res_.problems;
    bool doit = Allowed(fix);
    std::string tail;
    if (doit) {
      ++pending_;
      tail = action.empty() ? " (repaired)" : " (" + action + ")";
    } else if (fix == Fix::kNever) {
      tail = " (cannot be repaired by fsck)";
    } else if (fix == Fix::kPreen) {
      tail = " (-p or -y repairs it)";
    } else {
      tail = " (-y repairs it)";
    }
    std::fprintf(o_.out, "%s%s\n", what.c_str(), tail.c_str());
    return doit;
  }
  // A leftover of an operation a crash interrupted, of a kind the next mount
  // collects by itself (an orphan inode, an object no inode owns). After an
  // unclean shutdown that is the expected state, like a journal to replay:
  // it is reported as pending recovery and is not an error; -p/-y collect it
  // now. On a cleanly unmounted instance it is a problem like any other.
  // Returns true when the caller should collect it.
  bool Leftover(const std::string& what, const std::string& action) {
    if (clean_) return Problem(what, Fix::kPreen, action);
    ++res_.leftovers;
    const bool doit = Allowed(Fix::kPreen);
    if (doit) ++collect_;
    std::fprintf(o_.out, "recovery pending: %s (%s)\n", what.c_str(),
                 doit ? action.c_str() : "the next mount collects it; -p or -y does it now");
    return doit;
  }
  void Verbose(const std::string& what) {
    if (o_.verbose) std::fprintf(o_.out, "%s\n", what.c_str());
  }
  void OperationalError(const std::string& what) {
    res_.operational_error = true;
    std::fprintf(o_.out, "fsck.matrixfs: %s\n", what.c_str());
  }

  void CheckSuperblock();
  void CheckPool();
  void CheckPmWal(Pool* pool);
  void CheckContainer(Pool* pool);
  void CheckDatabaseFiles();
  struct BlobState {
    BlobFileMeta meta;
    BlobGarbage garbage;
  };
  void CheckTables(const std::map<int, std::map<uint64_t, FileMetaData>>& levels,
                   const std::map<uint64_t, BlobState>& blobs);
  void CheckBlobFile(const BlobState& b, const BlobGarbage& refs);
  void CheckWals(uint64_t log_number);
  void CheckGraph();
  bool Scan(DB* db);
  std::string PathOf(uint64_t ino) const;
  std::string DentPlace(const Dent& d) const;
  Node* Find(uint64_t ino) {
    auto it = nodes_.find(ino);
    return it == nodes_.end() || it->second.deleted ? nullptr : &it->second;
  }
  void Reclaim(uint64_t ino);
  void KillDent(size_t i) {
    dents_[i].live = false;
    batch_.Delete(DentryKey(dents_[i].parent, dents_[i].name));
  }
  void AddDent(uint64_t parent, const std::string& name, uint64_t ino, uint8_t type) {
    Dent d{parent, name, DirEntry{ino, type}, true};
    batch_.Put(DentryKey(parent, name), EncodeDirEntry(d.e));
    dents_.push_back(std::move(d));
  }
  uint64_t LostAndFound();

  const std::string datadir_;
  const FsckOptions o_;
  FsckResult res_;
  uint64_t pending_ = 0;  // repairs decided, not yet committed
  uint64_t collect_ = 0;  // leftovers to collect (not repairs: no error was found)
  bool clean_ = false;    // S state says the last unmount was clean
  std::unique_ptr<FileLock> lock_;
  bool have_sb_ = false;
  Superblock sb_;

  // The graph.
  std::map<uint64_t, Node> nodes_;
  std::vector<Dent> dents_;
  std::map<uint64_t, std::vector<uint64_t>> blocks_;       // F keys: ino -> blocks
  std::map<uint64_t, std::vector<std::string>> xattrs_;   // X keys: ino -> keys
  std::set<uint64_t> orphan_keys_;
  uint64_t next_ino_ = 0;
  bool have_next_ino_ = false;
  uint64_t keys_ = 0;
  WriteBatch batch_;
  std::vector<std::string> remove_objects_;
  std::vector<std::pair<std::string, uint64_t>> extend_objects_;
};

void Checker::CheckSuperblock() {
  auto sb = ReadSuperblock(datadir_);
  if (!sb) {
    Problem("superblock: " + sb.error().ToString(), Fix::kNever);
    return;
  }
  Status s = ValidateSuperblock(*sb);
  if (!s.ok()) Problem(SuperblockPath(datadir_) + ": " + s.ToString(), Fix::kNever);
  sb_ = *sb;
  have_sb_ = true;
  Verbose("superblock: UUID " + sb_.UuidString() + ", label \"" + sb_.label + "\", version " +
          std::to_string(sb_.version) + ", inline limit " + std::to_string(sb_.inline_limit) + ", block size " +
          std::to_string(sb_.block_size) + ", container share " + std::to_string(sb_.container_share).substr(0, 4) +
          (sb_.pool_path.empty() ? std::string(", no pool")
                                 : ", pool " + sb_.pool_path + " (" + std::to_string(sb_.pool_size) + " bytes)"));
  if (!sb_.pool_path.empty()) CheckPool();
}

bool UsesPool(const std::string& datadir, const Superblock& sb) {
  struct stat st;
  return !sb.pool_path.empty() && ::stat((KvPath(datadir) + "/POOL-IDENTITY").c_str(), &st) == 0;
}

void Checker::CheckPool() {
  const std::string& path = sb_.pool_path;
  struct stat st;
  if (!UsesPool(datadir_, sb_)) {
    Verbose("pool " + path + ": recorded in the superblock, but the database was made without it; not checked");
    return;
  }
  if (::stat(path.c_str(), &st) != 0) {
    Problem("pool " + path + " (named by the superblock) does not exist", Fix::kNever);
    return;
  }
  // -n maps the pool copy-on-write: nothing below reaches the pool.
  PoolOpenOptions po;
  po.read_only = o_.mode == FsckMode::kCheck;
  auto pool = Pool::Open(path, po);
  if (!pool) {
    Problem("pool " + path + ": " + pool.error().ToString(), Fix::kNever);
    return;
  }
  const PoolHeader& h = (*pool)->header();
  if ((*pool)->repaired_header()) {
    if (Problem("pool " + path + ": one header copy (offset 0 or " + std::to_string(kPoolPageSize) +
                    ") was bad; the other is intact",
                Fix::kPreen, "rebuilt from the intact copy")) {
      res_.repaired += 1;  // Pool::Open rewrote it (writable map)
      --pending_;
    }
  }
  // The pair: pool header <-> superblock (UUID, version, geometry).
  const std::string sbp = SuperblockPath(datadir_);
  const std::string pool_uuid = UuidToString(h.uuid);
  auto id = ReadFileToString(DefaultFileSystem(), KvPath(datadir_) + "/POOL-IDENTITY");
  if (sb_.PoolSharesUuid()) {
    if (pool_uuid != sb_.UuidString()) {
      Problem("pool " + path + " header (offset 16) has UUID " + pool_uuid + ", superblock " + sbp +
                  " (offset 16) has UUID " + sb_.UuidString() + ": the pool belongs to another instance",
              Fix::kNever);
    }
  } else {
    Verbose("pool " + path + ": version " + std::to_string(sb_.version) + " instance, the pool keeps its own UUID " +
            pool_uuid + " (kv/POOL-IDENTITY), not the superblock's " + sb_.UuidString());
  }
  const std::string have = pool_uuid + "\n";
  if (id && *id != have) {
    Problem("pool " + path + " header (offset 16) has UUID " + pool_uuid + ", " + KvPath(datadir_) +
                "/POOL-IDENTITY expects " + Slice(*id).ToEscaped(),
            Fix::kNever);
  }
  if (sb_.pool_size != 0 && h.pool_size != sb_.pool_size) {
    Problem("pool " + path + " header (offset 32) says " + std::to_string(h.pool_size) + " bytes, superblock " + sbp +
                " (offset 112) records " + std::to_string(sb_.pool_size),
            Fix::kNever);
  }
  if (h.pool_size > (*pool)->size()) {
    Problem("pool " + path + " maps " + std::to_string((*pool)->size()) + " bytes, its header says " +
                std::to_string(h.pool_size),
            Fix::kNever);
  }
  Verbose("pool " + path + ": layout version " + std::to_string(h.layout_version) + ", " +
          std::to_string(h.pool_size) + " bytes, WAL at " + std::to_string(h.wal_offset) + "+" +
          std::to_string(h.wal_size) + ", container at " + std::to_string(h.container_offset) + "+" +
          std::to_string(h.container_size) + ", UUID " + pool_uuid);
  CheckPmWal(pool->get());
  CheckContainer(pool->get());
}

void Checker::CheckPmWal(Pool* pool) {
  const std::string& path = pool->path();
  const PoolHeader& h = pool->header();
  auto wal = PmWal::Open(pool);
  if (!wal) {
    // The message names the record's logical and pool offsets; add its
    // segment and the sequence its header claims.
    std::string msg = wal.error().ToString();
    size_t at = msg.find("(pool offset ");
    if (at != std::string::npos) {
      uint64_t off = std::strtoull(msg.c_str() + at + 13, nullptr, 10);
      const uint64_t seg_base = h.wal_offset + kPoolPageSize;
      const uint64_t seg_size = DecodeFixed64(pool->At(h.wal_offset) + 16);
      if (off >= seg_base && off + kWalRecordHeaderSize <= h.wal_offset + h.wal_size && seg_size > 0) {
        msg += " [segment " + std::to_string((off - seg_base) / seg_size) + ", offset " +
               std::to_string((off - seg_base) % seg_size) + " in it; the header claims sequence " +
               std::to_string(DecodeFixed64(pool->At(off) + 8)) + "]";
      }
    }
    Problem("pool " + path + " write-ahead log: " + msg, Fix::kNever);
    return;
  }
  const uint64_t seg_base = h.wal_offset + kPoolPageSize;
  uint64_t records = 0;
  uint64_t last_seq = 0;
  Status s = (*wal)->Replay([&](uint64_t seq, const Slice& payload) {
    ++records;
    const uint64_t off = pool->OffsetOf(payload.data()) - kWalRecordHeaderSize;
    const std::string place = "record " + std::to_string(records) + " (segment " +
                              std::to_string((off - seg_base) / (*wal)->segment_size()) + ", pool offset " +
                              std::to_string(off) + ", sequence " + std::to_string(seq) + ")";
    if (payload.size() < 12) {
      return Status::Corruption(place + ": " + std::to_string(payload.size()) +
                                " bytes, shorter than a batch header (12)");
    }
    const uint64_t first = DecodeFixed64(payload.data());
    const uint32_t count = DecodeFixed32(payload.data() + 8);
    if (count == 0 || first + count - 1 != seq) {
      return Status::Corruption(place + ": the batch holds sequences " + std::to_string(first) + " + " +
                                std::to_string(count) + " entries, the record's sequence is " + std::to_string(seq));
    }
    if (seq < last_seq) {
      return Status::Corruption(place + ": sequence below the previous record's " + std::to_string(last_seq));
    }
    last_seq = seq;
    return Status::OK();
  });
  if (!s.ok()) Problem("pool " + path + " write-ahead log: " + s.ToString(), Fix::kNever);
  Verbose("pool " + path + ": " + std::to_string(records) + " WAL records");
}

// Walks the container's row slots itself, then (when the container opens)
// every live row's entries: key order, key length, forward pointers.
void Checker::CheckContainer(Pool* pool) {
  const std::string& path = pool->path();
  const PoolHeader& h = pool->header();
  const char* root = pool->At(h.container_offset);
  static const InternalKeyComparator icmp(BytewiseComparator());
  const std::string where = "pool " + path + " container root (offset " + std::to_string(h.container_offset) + ")";
  if (h.container_size < uint64_t{kContainerRootPages + 1} * kPoolPageSize ||
      std::memcmp(root, "MXFSMTRX", 8) != 0 || DecodeFixed32(root + 24) != Checksum32(root, 24)) {
    Problem(where + ": bad magic, checksum or size; no row can be found", Fix::kNever);
    return;
  }
  const uint32_t data_pages = DecodeFixed32(root + 16);
  if (uint64_t{data_pages} + kContainerRootPages > h.container_size / kPoolPageSize) {
    Problem(where + ": " + std::to_string(data_pages) + " data pages do not fit the region", Fix::kNever);
    return;
  }
  const char* data = root + uint64_t{kContainerRootPages} * kPoolPageSize;
  const uint64_t slots_off = h.container_offset + (1 + 2 * uint64_t{kCompactionRecordPages}) * kPoolPageSize;
  RowTableOptions ro;
  ro.comparator = &icmp;
  ro.bloom_bits_per_key = 0;  // the check reads no key here
  uint32_t rows = 0;
  bool slot_problem = false;
  for (uint32_t s = 0; s < kContainerRowSlots; ++s) {
    const uint64_t slot_off = slots_off + uint64_t{s} * 16;
    const uint64_t id = Pool::LoadWord(reinterpret_cast<const uint64_t*>(pool->At(slot_off + 8)));
    if (id == 0) continue;
    ++rows;
    const uint64_t loc = Pool::LoadWord(reinterpret_cast<const uint64_t*>(pool->At(slot_off)));
    const uint32_t first = static_cast<uint32_t>(loc), count = static_cast<uint32_t>(loc >> 32);
    const std::string place = "pool " + path + " row " + std::to_string(id) + " (container slot " +
                              std::to_string(s) + ", commit word at pool offset " + std::to_string(slot_off + 8) +
                              ")";
    if (count == 0 || first >= data_pages || count > data_pages) {
      Problem(place + ": lists pages [" + std::to_string(first) + ", +" + std::to_string(count) +
                  ") outside the " + std::to_string(data_pages) + " data pages",
              Fix::kNever);
      slot_problem = true;
      continue;
    }
    const std::string rw = "pool " + path + " offset " +
                           std::to_string(pool->OffsetOf(data + uint64_t{first} * kPoolPageSize)) + " (page " +
                           std::to_string(first) + ")";
    auto t = RowTable::Open(ro, data, data_pages, first, count, id, rw);
    if (!t) {
      Problem(place + ": " + t.error().ToString(), Fix::kNever);
      slot_problem = true;
    }
  }
  if (slot_problem) return;  // the container would refuse to open; the rows are named above
  ContainerOptions co;
  co.comparator = &icmp;
  co.bloom_bits_per_key = 0;
  auto c = MatrixContainer::Open(pool, co);
  if (!c) {
    Problem("pool " + path + " container: " + c.error().ToString(), Fix::kNever);
    return;
  }
  auto v = (*c)->Current();
  std::map<uint64_t, const RowRef*> by_id;
  for (const RowRef& r : v->rows()) by_id[r.table->row_id()] = &r;
  uint64_t entries = 0;
  for (const RowRef& r : v->rows()) {
    const RowTable& t = *r.table;
    const std::string place = "pool " + path + " row " + std::to_string(t.row_id()) + " (header at pool offset " +
                              std::to_string(pool->OffsetOf(data + uint64_t{t.first_page()} * kPoolPageSize)) + ")";
    auto prev_it = by_id.find(t.prev_row_id());
    const RowRef* prev = prev_it == by_id.end() ? nullptr : prev_it->second;
    int reported = 0;
    auto bad = [&](uint32_t i, const std::string& what) {
      if (reported++ < 5) {
        Problem(place + " entry " + std::to_string(i) + " (key " + t.Key(i).ToEscaped() + " at pool offset " +
                    std::to_string(pool->OffsetOf(t.Key(i).data())) + "): " + what,
                Fix::kNever);
      }
    };
    for (uint32_t i = r.start; i < t.num_entries(); ++i) {
      ++entries;
      const Slice k = t.Key(i);
      if (k.size() < kInternalKeyTrailer) {
        bad(i, std::to_string(k.size()) + "-byte key, shorter than the 8-byte sequence trailer");
        continue;
      }
      if (i > r.start && t.Key(i - 1).size() >= kInternalKeyTrailer && icmp.Compare(t.Key(i - 1), k) >= 0) {
        bad(i, "not above the previous entry's key " + t.Key(i - 1).ToEscaped());
      }
      if (prev != nullptr) {
        const RowTable& pt = *prev->table;
        const uint32_t f = t.Forward(i);
        if (f > pt.num_entries()) {
          bad(i, "forward pointer " + std::to_string(f) + " beyond row " + std::to_string(pt.row_id()) + "'s " +
                     std::to_string(pt.num_entries()) + " entries");
        } else if (f < pt.num_entries() && f >= prev->start && pt.Key(f).size() >= kInternalKeyTrailer &&
                   icmp.Compare(pt.Key(f), k) < 0) {
          bad(i, "forward pointer " + std::to_string(f) + " names a key below it in row " +
                     std::to_string(pt.row_id()));
        } else if (f > prev->start && f - 1 < pt.num_entries() && pt.Key(f - 1).size() >= kInternalKeyTrailer &&
                   icmp.Compare(pt.Key(f - 1), k) >= 0) {
          bad(i, "forward pointer " + std::to_string(f) + " skips keys of row " + std::to_string(pt.row_id()) +
                     " that are not below it");
        }
      }
    }
    if (reported > 5) {
      Problem(place + ": " + std::to_string(reported - 5) + " more entries with problems", Fix::kNever);
    }
  }
  Verbose("pool " + path + " container: " + std::to_string(rows) + " rows, " + std::to_string(entries) +
          " live entries checked (key order, forward pointers)");
}

void Checker::CheckDatabaseFiles() {
  FileSystem* fs = DefaultFileSystem();
  const std::string kv = KvPath(datadir_);
  const std::string current_path = CurrentFileName(kv);
  auto current = ReadFileToString(fs, current_path);
  if (!current) {
    Problem(current_path + ": " + current.error().ToString(), Fix::kNever);
    return;
  }
  std::string name = *current;
  if (name.empty() || name.back() != '\n') {
    Problem(current_path + ": expected a MANIFEST name ending in a newline, found " + Slice(name).ToEscaped(),
            Fix::kNever);
    return;
  }
  name.pop_back();
  uint64_t number = 0;
  FileType type;
  if (!ParseFileName(name, &number, &type) || type != FileType::kManifest) {
    Problem(current_path + ": names " + Slice(name).ToEscaped() + ", not a MANIFEST", Fix::kNever);
    return;
  }
  const std::string manifest = kv + "/" + name;
  auto file = fs->NewSequentialFile(manifest);
  if (!file) {
    Problem(current_path + " names " + name + ": " + file.error().ToString(), Fix::kNever);
    return;
  }
  LogReader reader(std::move(*file));
  std::map<int, std::map<uint64_t, FileMetaData>> levels;
  std::map<uint64_t, BlobState> blobs;
  uint64_t log_number = 0;
  std::string scratch;
  Slice record;
  uint64_t offset = 0;
  size_t records = 0;
  bool ok = true;
  while (reader.ReadRecord(&record, &scratch)) {
    VersionEdit edit;
    Status s = edit.DecodeFrom(record);
    if (!s.ok()) {
      Problem(manifest + " record " + std::to_string(records) + " at offset " + std::to_string(offset) + ": " +
                  s.ToString(),
              Fix::kNever);
      ok = false;
      break;
    }
    for (const auto& [level, num] : edit.deleted_files()) levels[level].erase(num);
    for (const auto& [level, f] : edit.new_files()) levels[level][f.number] = f;
    for (const BlobFileMeta& b : edit.new_blob_files()) blobs[b.number].meta = b;
    for (const auto& [num, g] : edit.blob_garbage()) {
      auto it = blobs.find(num);
      if (it == blobs.end()) {
        Problem(manifest + " record " + std::to_string(records) + " counts garbage in blob file " +
                    BlobFileName(kv, num) + ", which is not live",
                Fix::kNever);
        ok = false;
        continue;
      }
      it->second.garbage.records += g.records;
      it->second.garbage.bytes += g.bytes;
      if (it->second.garbage.records >= it->second.meta.records) blobs.erase(it);  // all garbage: gone
    }
    if (edit.log_number()) log_number = *edit.log_number();
    offset = reader.LastRecordEnd();
    ++records;
  }
  if (!reader.status().ok()) {
    Problem(manifest + " after record " + std::to_string(records) + " (offset " + std::to_string(offset) +
                "): " + reader.status().ToString(),
            Fix::kNever);
    ok = false;
  }
  if (records == 0 && ok) {
    Problem(manifest + ": no records", Fix::kNever);
    ok = false;
  }
  Verbose(manifest + ": " + std::to_string(records) + " records");
  if (ok) CheckTables(levels, blobs);
  CheckWals(log_number);
}

void Checker::CheckTables(const std::map<int, std::map<uint64_t, FileMetaData>>& levels,
                          const std::map<uint64_t, BlobState>& blobs) {
  static const InternalKeyComparator icmp(BytewiseComparator());
  FileSystem* fs = DefaultFileSystem();
  TableOptions topts;
  topts.comparator = &icmp;
  topts.filter_key = InternalFilterKey;
  topts.verify_checksums = true;
  const std::string kv = KvPath(datadir_);
  size_t tables = 0;
  std::map<uint64_t, BlobGarbage> refs;  // live records referenced, per blob file
  for (const auto& [level, files] : levels) {
    std::vector<const FileMetaData*> sorted;
    for (const auto& [num, f] : files) {
      ++tables;
      const std::string path = TableFileName(kv, num);
      auto size = fs->GetFileSize(path);
      if (!size) {
        Problem("L" + std::to_string(level) + " table " + path + ": " + size.error().ToString(), Fix::kNever);
        continue;
      }
      if (*size != f.file_size) {
        Problem(path + ": " + std::to_string(*size) + " bytes, the MANIFEST records " + std::to_string(f.file_size),
                Fix::kNever);
        continue;
      }
      auto raf = fs->NewRandomAccessFile(path);
      if (!raf) {
        Problem(path + ": " + raf.error().ToString(), Fix::kNever);
        continue;
      }
      auto table = Table::Open(topts, std::move(*raf), *size, num);
      if (!table) {
        Problem(path + ": " + table.error().ToString(), Fix::kNever);
        continue;
      }
      Status s = (*table)->VerifyAll();
      if (!s.ok()) {
        Problem(path + ": " + s.ToString(), Fix::kNever);
        continue;
      }
      // Blob references: every record of a live blob file that is not
      // garbage is named by exactly one table entry.
      {
        auto it = (*table)->NewIterator(false);
        std::set<uint64_t> unlisted;  // blob files the table's list leaves out, named already
        for (it->SeekToFirst(); it->Valid(); it->Next()) {
          ParsedInternalKey ik;
          if (!ParseInternalKey(it->key(), &ik) || ik.type != kTypeBlobIndex) continue;
          BlobIndex bi;
          Status bs = bi.DecodeFrom(it->value());
          if (!bs.ok()) {
            Problem(path + ": key " + ik.user_key.ToEscaped() + ": " + bs.ToString(), Fix::kNever);
            continue;
          }
          if (!blobs.contains(bi.file_number)) {
            Problem(path + ": key " + ik.user_key.ToEscaped() + " points into blob file " +
                        BlobFileName(kv, bi.file_number) + ", which the MANIFEST does not list as live",
                    Fix::kNever);
            continue;
          }
          if (!f.MayReferenceBlob(bi.file_number) && unlisted.insert(bi.file_number).second) {
            // Harmless for reads, but blob GC would never rewrite this
            // table for that file, so the file's garbage would stay. Named
            // once per table and file, with the first key.
            Problem(path + ": key " + ik.user_key.ToEscaped() + " points into blob file " +
                        BlobFileName(kv, bi.file_number) +
                        ", which the MANIFEST's blob-reference list for the table does not name",
                    Fix::kNever);
          }
          BlobGarbage& r = refs[bi.file_number];
          r.records++;
          r.bytes += BlobRecordSize(ik.user_key.size(), bi.value_size);
        }
        if (!it->status().ok()) Problem(path + ": " + it->status().ToString(), Fix::kNever);
      }
      const TableProperties& p = (*table)->properties();
      if (p.num_entries > 0 && (Slice(p.smallest_key) != f.smallest.Encode() || Slice(p.largest_key) != f.largest.Encode())) {
        Problem(path + ": holds keys " + InternalKeyToString(p.smallest_key) + " .. " +
                    InternalKeyToString(p.largest_key) + ", the MANIFEST declares " + f.smallest.DebugString() +
                    " .. " + f.largest.DebugString(),
                Fix::kNever);
      }
      sorted.push_back(&f);
    }
    if (level == 0) continue;
    std::sort(sorted.begin(), sorted.end(), [](const FileMetaData* a, const FileMetaData* b) {
      return icmp.Compare(a->smallest.Encode(), b->smallest.Encode()) < 0;
    });
    for (size_t i = 1; i < sorted.size(); ++i) {
      if (BytewiseComparator()->Compare(sorted[i - 1]->largest.user_key(), sorted[i]->smallest.user_key()) >= 0) {
        Problem("L" + std::to_string(level) + ": tables " + TableFileName(kv, sorted[i - 1]->number) + " (.. " +
                    sorted[i - 1]->largest.DebugString() + ") and " + TableFileName(kv, sorted[i]->number) + " (" +
                    sorted[i]->smallest.DebugString() + " ..) overlap",
                Fix::kNever);
      }
    }
  }
  Verbose(kv + ": " + std::to_string(tables) + " live tables checked");
  for (const auto& [num, b] : blobs) CheckBlobFile(b, refs[num]);
  Verbose(kv + ": " + std::to_string(blobs.size()) + " live blob files checked");
}

void Checker::CheckBlobFile(const BlobState& b, const BlobGarbage& refs) {
  FileSystem* fs = DefaultFileSystem();
  const std::string path = BlobFileName(KvPath(datadir_), b.meta.number);
  const uint64_t live_records = b.meta.records - b.garbage.records;
  const uint64_t live_bytes = b.meta.record_bytes - std::min(b.meta.record_bytes, b.garbage.bytes);
  if (refs.records != live_records || refs.bytes != live_bytes) {
    Problem(path + ": the MANIFEST counts " + std::to_string(live_records) + " live records (" +
                std::to_string(live_bytes) + " bytes), the tables reference " + std::to_string(refs.records) + " (" +
                std::to_string(refs.bytes) + " bytes)",
            Fix::kNever);
  }
  auto size = fs->GetFileSize(path);
  if (!size) {
    Problem("blob file " + path + ": " + size.error().ToString(), Fix::kNever);
    return;
  }
  if (*size != b.meta.file_size) {
    Problem(path + ": " + std::to_string(*size) + " bytes, the MANIFEST records " + std::to_string(b.meta.file_size),
            Fix::kNever);
    return;
  }
  auto raf = fs->NewRandomAccessFile(path);
  if (!raf) {
    Problem(path + ": " + raf.error().ToString(), Fix::kNever);
    return;
  }
  BlobFileSummary sum;
  Status s = ScanBlobFile(raf->get(), *size, [](uint64_t, const Slice&, const Slice&) { return true; }, &sum);
  if (!s.ok()) {
    Problem(s.ToString(), Fix::kNever);
  } else if (sum.records != b.meta.records || sum.record_bytes != b.meta.record_bytes) {
    Problem(path + ": holds " + std::to_string(sum.records) + " records, the MANIFEST records " +
                std::to_string(b.meta.records),
            Fix::kNever);
  }
}

void Checker::CheckWals(uint64_t log_number) {
  FileSystem* fs = DefaultFileSystem();
  const std::string kv = KvPath(datadir_);
  auto children = fs->GetChildren(kv);
  if (!children) {
    OperationalError(children.error().ToString());
    return;
  }
  std::sort(children->begin(), children->end());
  for (const std::string& name : *children) {
    uint64_t number;
    FileType type;
    if (!ParseFileName(name, &number, &type) || type != FileType::kLog || number < log_number) continue;
    const std::string path = kv + "/" + name;
    auto file = fs->NewSequentialFile(path);
    if (!file) {
      Problem(path + ": " + file.error().ToString(), Fix::kNever);
      continue;
    }
    LogReader reader(std::move(*file));
    std::string scratch;
    Slice record;
    uint64_t records = 0, offset = 0;
    bool bad = false;
    while (reader.ReadRecord(&record, &scratch)) {
      // A record is a WriteBatch: 8-byte sequence, 4-byte count, then entries.
      if (record.size() < 12) {
        Problem(path + " record " + std::to_string(records) + " at offset " + std::to_string(offset) + ": " +
                    std::to_string(record.size()) + " bytes, shorter than a batch header (12)",
                Fix::kNever);
        bad = true;
        break;
      }
      offset = reader.LastRecordEnd();
      ++records;
    }
    if (!bad && !reader.status().ok()) {
      Problem(path + " after record " + std::to_string(records) + " (offset " + std::to_string(offset) + "): " +
                  reader.status().ToString(),
              Fix::kNever);
    }
    Verbose(path + ": " + std::to_string(records) + " records" +
            (reader.DroppedBytes() ? ", torn tail of " + std::to_string(reader.DroppedBytes()) + " bytes ignored" : ""));
  }
}

bool Checker::Scan(DB* db) {
  ReadOptions ro;
  ro.fill_cache = false;
  auto it = db->NewIterator(ro);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    ++keys_;
    if (o_.progress && keys_ % 65536 == 0) {
      std::fprintf(stderr, "\rscanning keys: %" PRIu64, keys_);
      std::fflush(stderr);
    }
    Slice k = it->key();
    Slice v = it->value();
    const std::string place = "key " + k.ToEscaped();
    switch (k.empty() ? 0 : k[0]) {
      case kTagInode: {
        if (k.size() != 9) {
          if (Problem(place + ": inode key of " + std::to_string(k.size()) + " bytes (expected 9)", Fix::kPreen,
                      "deleted")) {
            batch_.Delete(k);
          }
          break;
        }
        uint64_t ino = KeyIno(k);
        Node n;
        Status s = DecodeInodeAttr(ino, v, &n.a);
        if (!s.ok()) {
          Problem(place + ": " + s.ToString(), Fix::kNever);
          break;
        }
        nodes_[ino] = std::move(n);
        break;
      }
      case kTagDentry: {
        DirEntry e;
        Status s = k.size() > 9 ? DecodeDirEntry(k, v, &e) : Status::Corruption("dentry key shorter than 10 bytes");
        if (!s.ok()) {
          if (Problem(place + ": " + s.ToString(), Fix::kRepair, "deleted")) batch_.Delete(k);
          break;
        }
        dents_.push_back(Dent{KeyIno(k), KeyName(k).ToString(), e, true});
        break;
      }
      case kTagBlock:
        if (k.size() != 17) {
          if (Problem(place + ": data key of " + std::to_string(k.size()) + " bytes (expected 17)", Fix::kPreen,
                      "deleted")) {
            batch_.Delete(k);
          }
          break;
        }
        blocks_[KeyIno(k)].push_back(BlockKeyBlock(k));
        break;
      case kTagXattr:
        xattrs_[KeyIno(k)].push_back(k.ToString());
        break;
      case kTagOrphan:
        orphan_keys_.insert(KeyIno(k));
        break;
      case kTagSystem:
        if (k == Slice(SystemKey("state"))) {
          clean_ = v == Slice(kStateClean);
        } else if (k == Slice(SystemKey("next_ino"))) {
          if (v.size() == 8) {
            next_ino_ = DecodeFixed64(v.data());
            have_next_ino_ = true;
          } else {
            Problem(place + ": value of " + std::to_string(v.size()) + " bytes (expected 8)", Fix::kPreen,
                    "rewritten");
          }
        }
        break;
      default:
        if (Problem(place + ": unknown key tag", Fix::kRepair, "deleted")) batch_.Delete(k);
    }
  }
  if (o_.progress && keys_ >= 65536) std::fprintf(stderr, "\r\n");
  if (!it->status().ok()) {
    Problem("key scan stopped after " + std::to_string(keys_) + " keys: " + it->status().ToString() +
                "; the filesystem graph was not checked",
            Fix::kNever);
    return false;
  }
  Verbose("key scan: " + std::to_string(keys_) + " keys, " + std::to_string(nodes_.size()) + " inodes, " +
          std::to_string(dents_.size()) + " directory entries");
  return true;
}

std::string Checker::PathOf(uint64_t ino) const {
  if (ino == kRootIno) return "/";
  std::map<uint64_t, const Dent*> up;
  for (const Dent& d : dents_) {
    if (d.live && !up.count(d.e.ino)) up[d.e.ino] = &d;
  }
  std::string path;
  std::set<uint64_t> seen;
  uint64_t cur = ino;
  while (cur != kRootIno) {
    auto it = up.find(cur);
    if (it == up.end() || !seen.insert(cur).second) return "(unreachable)" + path;
    path = "/" + it->second->name + path;
    cur = it->second->parent;
  }
  return path;
}

std::string Checker::DentPlace(const Dent& d) const {
  std::string parent = PathOf(d.parent);
  return "dentry " + (parent == "/" ? "" : parent) + "/" + d.name + " (key " +
         Slice(DentryKey(d.parent, d.name)).ToEscaped() + ")";
}

void Checker::Reclaim(uint64_t ino) {
  Node& n = nodes_[ino];
  n.deleted = true;
  batch_.Delete(InodeKey(ino));
  batch_.Delete(OrphanKey(ino));
  for (uint64_t b : blocks_[ino]) batch_.Delete(BlockKey(ino, b));
  blocks_.erase(ino);
  for (const std::string& k : xattrs_[ino]) batch_.Delete(k);
  xattrs_.erase(ino);
  if (n.a.storage == Storage::kObject) remove_objects_.push_back(DataPath(datadir_) + "/" + Hex16(ino));
}

uint64_t Checker::LostAndFound() {
  for (const Dent& d : dents_) {
    if (d.live && d.parent == kRootIno && d.name == "lost+found") {
      Node* n = Find(d.e.ino);
      if (n != nullptr && n->a.IsDir()) return d.e.ino;
    }
  }
  uint64_t ino = std::max<uint64_t>(next_ino_, kFirstIno);
  for (const auto& [i, n] : nodes_) {
    if (i < kFirstVirtualIno && i >= ino) ino = i + 1;
  }
  next_ino_ = ino + 1;
  have_next_ino_ = false;  // rewritten below
  Node n;
  n.a.mode = S_IFDIR | 0700;
  n.a.nlink = 2;
  n.a.parent = kRootIno;
  n.a.generation = 1;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  n.a.atime_ns = n.a.mtime_ns = n.a.ctime_ns = n.a.crtime_ns =
      static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  n.dirty = true;
  nodes_[ino] = n;
  AddDent(kRootIno, "lost+found", ino, DT_DIR);
  std::fprintf(o_.out, "created /lost+found (inode %" PRIu64 ")\n", ino);
  return ino;
}

void Checker::CheckGraph() {
  const std::string kv = KvPath(datadir_);
  Options opts;
  opts.create_if_missing = false;
  // -n: replay the WALs into memory only; nothing in kv/ or the pool changes.
  opts.read_only = o_.mode == FsckMode::kCheck;
  if (have_sb_ && UsesPool(datadir_, sb_)) {
    opts.nvm_path = sb_.pool_path;
    opts.nvm_size = sb_.pool_size;
  }
  auto db = DB::Open(opts, kv);
  if (!db) {
    if (db.error().IsBusy()) {
      res_.mounted = true;
      OperationalError(datadir_ + " is in use (mounted?): " + db.error().ToString());
      return;
    }
    Problem("the database " + kv + " cannot be opened: " + db.error().ToString(), Fix::kNever);
    return;
  }
  if (!Scan(db->get())) {
    (void)(*db)->Close();
    return;
  }

  // Root.
  Node* root = Find(kRootIno);
  if (root == nullptr || !root->a.IsDir()) {
    Problem(std::string("inode 1 (the root directory, key ") + Slice(InodeKey(kRootIno)).ToEscaped() + ") is " +
                (root == nullptr ? "missing" : "not a directory") + "; the graph cannot be checked",
            Fix::kNever);
    (void)(*db)->Close();
    return;
  }

  // Orphans.
  for (uint64_t ino : orphan_keys_) {
    Node* n = Find(ino);
    std::string place = "orphan record " + Slice(OrphanKey(ino)).ToEscaped();
    if (n == nullptr) {
      if (Problem(place + ": inode " + std::to_string(ino) + " does not exist", Fix::kPreen, "record deleted")) {
        batch_.Delete(OrphanKey(ino));
      }
    } else if (n->a.nlink == 0) {
      if (Leftover(place + ": inode " + std::to_string(ino) + " was unlinked while open and never reclaimed",
                   "reclaimed")) {
        Reclaim(ino);
      } else {
        n->orphan = true;
      }
    } else {
      if (Problem(place + ": inode " + std::to_string(ino) + " has nlink " + std::to_string(n->a.nlink),
                  Fix::kPreen, "record deleted")) {
        batch_.Delete(OrphanKey(ino));
      }
    }
  }

  // Directory entries.
  for (size_t i = 0; i < dents_.size(); ++i) {
    Dent& d = dents_[i];
    Node* parent = Find(d.parent);
    Node* child = Find(d.e.ino);
    if (parent == nullptr || !parent->a.IsDir()) {
      if (Problem(DentPlace(d) + ": its directory (inode " + std::to_string(d.parent) + ") " +
                      (parent == nullptr ? "does not exist" : "is not a directory"),
                  Fix::kRepair, "entry deleted")) {
        KillDent(i);
      }
    } else if (child == nullptr || d.e.ino == kRootIno) {
      if (Problem(DentPlace(d) + ": names inode " + std::to_string(d.e.ino) +
                      (d.e.ino == kRootIno ? ", the root directory" : ", which does not exist (key " +
                                                                           Slice(InodeKey(d.e.ino)).ToEscaped() + ")"),
                  Fix::kRepair, "entry deleted")) {
        KillDent(i);
      }
    } else if (d.e.type != ModeToDirType(child->a.mode)) {
      if (Problem(DentPlace(d) + ": type " + std::to_string(d.e.type) + ", inode " + std::to_string(d.e.ino) +
                      " has type " + std::to_string(ModeToDirType(child->a.mode)),
                  Fix::kPreen, "entry type corrected")) {
        d.e.type = ModeToDirType(child->a.mode);
        batch_.Put(DentryKey(d.parent, d.name), EncodeDirEntry(d.e));
      }
    }
  }

  // Each directory: exactly one parent entry.
  std::map<uint64_t, std::vector<size_t>> refs;
  for (size_t i = 0; i < dents_.size(); ++i) {
    if (dents_[i].live) refs[dents_[i].e.ino].push_back(i);
  }
  for (auto& [ino, list] : refs) {
    Node* n = Find(ino);
    if (n == nullptr || !n->a.IsDir() || list.size() < 2) continue;
    size_t keep = list[0];
    for (size_t i : list) {
      if (dents_[i].parent == n->a.parent) keep = i;
    }
    for (size_t i : list) {
      if (i == keep) continue;
      if (Problem(DentPlace(dents_[i]) + ": directory inode " + std::to_string(ino) + " is also " +
                      DentPlace(dents_[keep]),
                  Fix::kRepair, "extra entry deleted")) {
        KillDent(i);
      }
    }
  }

  // Reachability from the root.
  std::map<uint64_t, std::vector<size_t>> children;
  auto rebuild_children = [&] {
    children.clear();
    for (size_t i = 0; i < dents_.size(); ++i) {
      if (dents_[i].live) children[dents_[i].parent].push_back(i);
    }
  };
  rebuild_children();
  std::set<uint64_t> reached;
  auto reach_from = [&](uint64_t start) {
    std::vector<uint64_t> stack{start};
    reached.insert(start);
    while (!stack.empty()) {
      uint64_t cur = stack.back();
      stack.pop_back();
      auto it = children.find(cur);
      if (it == children.end()) continue;
      for (size_t i : it->second) {
        if (!dents_[i].live) continue;
        uint64_t c = dents_[i].e.ino;
        if (Find(c) != nullptr && reached.insert(c).second) stack.push_back(c);
      }
    }
  };
  reach_from(kRootIno);
  uint64_t lost = 0;
  for (bool progress = true; progress;) {
    progress = false;
    // Top-level pieces first (no live entry anywhere), then cycles.
    uint64_t pick = 0;
    for (int pass = 0; pass < 2 && pick == 0; ++pass) {
      for (auto& [ino, n] : nodes_) {
        if (n.deleted || n.orphan || reached.count(ino) || ino >= kFirstVirtualIno) continue;
        auto r = refs.find(ino);
        bool has_ref = false;  // an entry that could connect it (in an existing directory)
        if (r != refs.end()) {
          for (size_t i : r->second) {
            Node* p = Find(dents_[i].parent);
            has_ref |= dents_[i].live && p != nullptr && p->a.IsDir();
          }
        }
        if (pass == 0 ? !has_ref : n.a.IsDir()) {
          pick = ino;
          break;
        }
      }
    }
    if (pick == 0) break;
    Node& n = nodes_[pick];
    std::string what = "inode " + std::to_string(pick) + " (" + (n.a.IsDir() ? "directory" : "file") + ", " +
                       std::to_string(n.a.size) + " bytes, key " + Slice(InodeKey(pick)).ToEscaped() +
                       ") is not reachable from the root";
    if (!Problem(what, Fix::kRepair, "linked into /lost+found")) {
      // Report the rest of its piece as part of it.
      reach_from(pick);
      progress = true;
      continue;
    }
    if (lost == 0) {
      lost = LostAndFound();
      reached.insert(lost);
    }
    if (n.a.IsDir()) {
      for (size_t i : refs[pick]) {
        if (dents_[i].live) KillDent(i);
      }
    }
    std::string name = "#" + std::to_string(pick);
    AddDent(lost, name, pick, ModeToDirType(n.a.mode));
    refs[pick].push_back(dents_.size() - 1);
    rebuild_children();
    reach_from(pick);
    progress = true;
  }

  // Link counts and parent fields from the (repaired) entries.
  std::map<uint64_t, uint32_t> counted;
  std::map<uint64_t, uint64_t> parent_of;
  for (const Dent& d : dents_) {
    if (!d.live) continue;
    Node* c = Find(d.e.ino);
    if (c == nullptr) continue;
    if (c->a.IsDir()) {
      counted[d.parent] += 1;  // the child's ".."
      parent_of[d.e.ino] = d.parent;
    } else {
      counted[d.e.ino] += 1;
    }
  }
  parent_of[kRootIno] = kRootIno;
  for (auto& [ino, n] : nodes_) {
    if (n.deleted || n.orphan) continue;
    uint32_t want = counted[ino] + (n.a.IsDir() ? 2 : 0);
    if (n.a.nlink != want) {
      if (Problem("inode " + std::to_string(ino) + " " + PathOf(ino) + ": nlink " + std::to_string(n.a.nlink) +
                      ", " + std::to_string(want) + " references",
                  Fix::kPreen, "nlink set to " + std::to_string(want))) {
        n.a.nlink = want;
        n.dirty = true;
      }
    }
    if (n.a.IsDir() && parent_of.count(ino) && n.a.parent != parent_of[ino]) {
      if (Problem("directory inode " + std::to_string(ino) + " " + PathOf(ino) + ": parent field " +
                      std::to_string(n.a.parent) + ", its entry is in directory " + std::to_string(parent_of[ino]),
                  Fix::kPreen, "parent field corrected")) {
        n.a.parent = parent_of[ino];
        n.dirty = true;
      }
    }
  }

  // Data and xattr keys.
  for (auto& [ino, list] : blocks_) {
    Node* n = Find(ino);
    std::string why;
    if (n == nullptr) {
      why = "inode " + std::to_string(ino) + " does not exist";
    } else if (!n->a.IsReg()) {
      why = "inode " + std::to_string(ino) + " is not a regular file";
    } else if (n->a.storage == Storage::kObject) {
      why = "inode " + std::to_string(ino) + " keeps its data in an object";
    }
    if (why.empty()) continue;
    if (Problem(std::to_string(list.size()) + " data keys " + Slice(BlockKey(ino, list.front())).ToEscaped() +
                    "..: " + why,
                Fix::kPreen, "deleted")) {
      for (uint64_t b : list) batch_.Delete(BlockKey(ino, b));
    }
  }
  for (auto& [ino, list] : xattrs_) {
    if (Find(ino) != nullptr) continue;
    if (Problem(std::to_string(list.size()) + " extended attribute keys " + Slice(list.front()).ToEscaped() +
                    "..: inode " + std::to_string(ino) + " does not exist",
                Fix::kPreen, "deleted")) {
      for (const std::string& k : list) batch_.Delete(k);
    }
  }

  // Large-file objects.
  const std::string data = DataPath(datadir_);
  std::set<uint64_t> objects;
  if (DIR* d = ::opendir(data.c_str())) {
    while (struct dirent* de = ::readdir(d)) {
      std::string name = de->d_name;
      if (name == "." || name == "..") continue;
      char* end = nullptr;
      uint64_t ino = std::strtoull(name.c_str(), &end, 16);
      if (name.size() != 16 || *end != '\0') {
        Verbose(data + "/" + name + ": not an object name; ignored");
        continue;
      }
      objects.insert(ino);
      Node* n = Find(ino);
      if (n == nullptr || n->a.storage != Storage::kObject) {
        if (Leftover("object " + data + "/" + name + ": inode " + std::to_string(ino) +
                         (n == nullptr ? " does not exist" : " keeps its data inline"),
                     "removed")) {
          remove_objects_.push_back(data + "/" + name);
        }
      }
    }
    ::closedir(d);
  } else {
    Problem(data + ": " + std::strerror(errno), Fix::kNever);
  }
  for (auto& [ino, n] : nodes_) {
    if (n.deleted || n.a.storage != Storage::kObject) continue;
    const std::string path = data + "/" + Hex16(ino);
    struct stat st;
    if (!objects.count(ino) || ::stat(path.c_str(), &st) != 0) {
      if (Problem("inode " + std::to_string(ino) + " " + PathOf(ino) + ": its object " + path + " is missing (" +
                      std::to_string(n.a.size) + " bytes of data lost)",
                  Fix::kRepair, "an empty object of that size was created; the file reads as zeros")) {
        extend_objects_.emplace_back(path, n.a.size);
      }
    } else if (static_cast<uint64_t>(st.st_size) < n.a.size) {
      if (Problem("inode " + std::to_string(ino) + " " + PathOf(ino) + ": object " + path + " has " +
                      std::to_string(st.st_size) + " bytes, the inode says " + std::to_string(n.a.size),
                  Fix::kRepair, "object extended; the missing part reads as zeros")) {
        extend_objects_.emplace_back(path, n.a.size);
      }
    } else if (static_cast<uint64_t>(st.st_size) > n.a.size && !clean_) {
      // After a crash: bytes a FUSE passthrough writer put into the object
      // whose size was not committed yet, or an interrupted shrink, growth or
      // write (MatrixFs::Startup). The mount takes the object's size over;
      // -p/-y do it now. On a cleanly unmounted instance the mount cuts the
      // object instead, as it always did, so that is not reported.
      if (Leftover("inode " + std::to_string(ino) + " " + PathOf(ino) + ": object " + path + " has " +
                       std::to_string(st.st_size) + " bytes, the inode says " + std::to_string(n.a.size),
                   "the inode takes the object's size")) {
        n.a.size = static_cast<uint64_t>(st.st_size);
        n.dirty = true;
      }
    }
  }

  // The inode allocator.
  uint64_t max_ino = 0;
  for (auto& [ino, n] : nodes_) {
    if (!n.deleted && ino < kFirstVirtualIno) max_ino = std::max(max_ino, ino);
  }
  if (!have_next_ino_ && lost == 0) {
    if (Problem("record " + Slice(SystemKey("next_ino")).ToEscaped() + " is missing or malformed", Fix::kPreen,
                "rewritten")) {
      next_ino_ = std::max<uint64_t>(max_ino + 1, kFirstIno);
      have_next_ino_ = false;
    }
  } else if (have_next_ino_ && next_ino_ <= max_ino) {
    if (Problem("record " + Slice(SystemKey("next_ino")).ToEscaped() + " = " + std::to_string(next_ino_) +
                    ", but inode " + std::to_string(max_ino) + " exists",
                Fix::kPreen, "set to " + std::to_string(max_ino + 1))) {
      next_ino_ = max_ino + 1;
      have_next_ino_ = false;
    }
  }
  if (!have_next_ino_ && pending_ > 0) {
    std::string v;
    PutFixed64(&v, std::max<uint64_t>(next_ino_, kFirstIno));
    batch_.Put(SystemKey("next_ino"), v);
  }

  // Commit.
  for (auto& [ino, n] : nodes_) {
    if (n.dirty && !n.deleted) batch_.Put(InodeKey(ino), EncodeInodeAttr(n.a));
  }
  if (pending_ + collect_ > 0) {
    WriteOptions wo;
    wo.sync = true;
    Status s = (*db)->Write(wo, &batch_);
    if (!s.ok()) {
      OperationalError("writing the repairs: " + s.ToString());
      (void)(*db)->Close();
      return;
    }
    for (const std::string& p : remove_objects_) {
      if (::unlink(p.c_str()) != 0 && errno != ENOENT) {
        OperationalError("cannot remove " + p + ": " + std::strerror(errno));
      }
    }
    for (const auto& [p, size] : extend_objects_) {
      int fd = ::open(p.c_str(), O_WRONLY | O_CREAT, 0600);
      if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0 || ::fsync(fd) != 0) {
        OperationalError("cannot extend " + p + ": " + std::strerror(errno));
      }
      if (fd >= 0) ::close(fd);
    }
    res_.repaired += pending_;
    res_.collected += collect_;
    pending_ = 0;
    collect_ = 0;
  }
  Status s = (*db)->Close();
  if (!s.ok()) OperationalError("closing the database: " + s.ToString());
}

FsckResult Checker::Run() {
  struct stat st;
  if (::stat(datadir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    OperationalError(datadir_ + ": not a directory");
    return res_;
  }
  std::string what;
  if (InstanceInUse(datadir_, &what)) {
    res_.mounted = true;
    OperationalError("refusing to check " + datadir_ + ": " + what + "; unmount it first");
    return res_;
  }
  if (::stat(SuperblockPath(datadir_).c_str(), &st) != 0 && ::stat(KvPath(datadir_).c_str(), &st) != 0) {
    OperationalError(datadir_ + " is not a MatrixFS instance (no superblock, no kv/)");
    return res_;
  }
  // Hold the database lock across the file checks so no mount starts meanwhile.
  auto lock = DefaultFileSystem()->LockFile(LockFileName(KvPath(datadir_)));
  if (lock) lock_ = std::move(*lock);
  Verbose("checking " + datadir_);
  CheckSuperblock();
  CheckDatabaseFiles();
  lock_.reset();
  if (!res_.operational_error) CheckGraph();
  if (o_.verbose || res_.problems > 0) {
    std::fprintf(o_.out, "%s: %" PRIu64 " problems, %" PRIu64 " repaired\n", datadir_.c_str(), res_.problems,
                 res_.repaired);
  }
  if (res_.leftovers > 0) {
    std::fprintf(o_.out,
                 "%s: not cleanly unmounted; %" PRIu64 " leftovers of interrupted operations, %" PRIu64
                 " collected now (the next mount collects the rest)\n",
                 datadir_.c_str(), res_.leftovers, res_.collected);
  }
  return res_;
}

}  // namespace

bool InstanceInUse(const std::string& datadir, std::string* what) {
  const std::string real = RealPath(datadir);
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream head(line.substr(0, sep));
    std::string id, parent, dev, root, mnt;
    head >> id >> parent >> dev >> root >> mnt;
    std::istringstream tail(line.substr(sep + 3));
    std::string fstype, source;
    tail >> fstype >> source;
    if (fstype != "fuse.matrixfs") continue;
    source = Unescape(source);
    if (source == datadir || RealPath(source) == real) {
      *what = "it is mounted on " + Unescape(mnt);
      return true;
    }
  }
  const std::string lock_path = LockFileName(KvPath(datadir));
  struct stat st;
  if (::stat(lock_path.c_str(), &st) == 0) {
    auto lock = DefaultFileSystem()->LockFile(lock_path);
    if (!lock) {
      *what = "its database lock " + lock_path + " is held (" + lock.error().ToString() + ")";
      return true;
    }
  }
  return false;
}

FsckResult RunFsck(const std::string& datadir, const FsckOptions& options) {
  Checker c(datadir, options);
  return c.Run();
}

}  // namespace mxfs
