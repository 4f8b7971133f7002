// fsck, the layers in the pool: the superblock and the pool header that
// must match it, the PM WAL's records, the container's row slots and the
// rows' entries (fsck_checker.h).
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "base/coding.h"
#include "base/hash.h"
#include "kvcore/dbformat.h"
#include "kvcore/filename.h"
#include "mkfs/fsck_checker.h"
#include "nvm/matrix_container.h"
#include "nvm/pm_wal.h"
#include "nvm/pool.h"
#include "nvm/row_table.h"

namespace mxfs {
namespace fsck {

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
  CheckContainerEntries(pool, data, rows);
}

// Opens the container as the engine does and checks every live entry of
// every row: key length and order, forward pointers into the older row.
void Checker::CheckContainerEntries(Pool* pool, const char* data, uint32_t rows) {
  const std::string& path = pool->path();
  static const InternalKeyComparator icmp(BytewiseComparator());
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

}  // namespace fsck
}  // namespace mxfs
