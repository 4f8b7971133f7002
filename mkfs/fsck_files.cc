// fsck, the database files in kv/: CURRENT, every MANIFEST record, every
// live SSTable and blob file, the SSD WALs (fsck_checker.h).
#include <algorithm>
#include <set>
#include <string>

#include "kvcore/blob_store.h"
#include "kvcore/dbformat.h"
#include "kvcore/filename.h"
#include "kvcore/log_reader.h"
#include "mkfs/fsck_checker.h"
#include "ssd/blob_file.h"
#include "ssd/table.h"

namespace mxfs {
namespace fsck {

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
  const std::string kv = KvPath(datadir_);
  size_t tables = 0;
  std::map<uint64_t, BlobGarbage> refs;  // live records referenced, per blob file
  for (const auto& [level, files] : levels) {
    std::vector<const FileMetaData*> readable;
    for (const auto& [num, f] : files) {
      ++tables;
      if (CheckTable(level, f, blobs, &refs)) readable.push_back(&f);
    }
    if (level != 0) CheckLevelOverlaps(level, std::move(readable));
  }
  Verbose(kv + ": " + std::to_string(tables) + " live tables checked");
  for (const auto& [num, b] : blobs) CheckBlobFile(b, refs[num]);
  Verbose(kv + ": " + std::to_string(blobs.size()) + " live blob files checked");
}

bool Checker::CheckTable(int level, const FileMetaData& f, const std::map<uint64_t, BlobState>& blobs,
                         std::map<uint64_t, BlobGarbage>* refs) {
  static const InternalKeyComparator icmp(BytewiseComparator());
  FileSystem* fs = DefaultFileSystem();
  TableOptions topts;
  topts.comparator = &icmp;
  topts.filter_key = InternalFilterKey;
  topts.verify_checksums = true;
  const std::string path = TableFileName(KvPath(datadir_), f.number);
  auto size = fs->GetFileSize(path);
  if (!size) {
    Problem("L" + std::to_string(level) + " table " + path + ": " + size.error().ToString(), Fix::kNever);
    return false;
  }
  if (*size != f.file_size) {
    Problem(path + ": " + std::to_string(*size) + " bytes, the MANIFEST records " + std::to_string(f.file_size),
            Fix::kNever);
    return false;
  }
  auto raf = fs->NewRandomAccessFile(path);
  if (!raf) {
    Problem(path + ": " + raf.error().ToString(), Fix::kNever);
    return false;
  }
  auto table = Table::Open(topts, std::move(*raf), *size, f.number);
  if (!table) {
    Problem(path + ": " + table.error().ToString(), Fix::kNever);
    return false;
  }
  Status s = (*table)->VerifyAll();
  if (!s.ok()) {
    Problem(path + ": " + s.ToString(), Fix::kNever);
    return false;
  }
  CheckBlobReferences(path, table->get(), f, blobs, refs);
  const TableProperties& p = (*table)->properties();
  if (p.num_entries > 0 && (Slice(p.smallest_key) != f.smallest.Encode() || Slice(p.largest_key) != f.largest.Encode())) {
    Problem(path + ": holds keys " + InternalKeyToString(p.smallest_key) + " .. " +
                InternalKeyToString(p.largest_key) + ", the MANIFEST declares " + f.smallest.DebugString() +
                " .. " + f.largest.DebugString(),
            Fix::kNever);
  }
  return true;
}

// Every record of a live blob file that is not garbage is named by exactly
// one table entry: counts the records this table names into *refs.
void Checker::CheckBlobReferences(const std::string& path, Table* table, const FileMetaData& f,
                                  const std::map<uint64_t, BlobState>& blobs,
                                  std::map<uint64_t, BlobGarbage>* refs) {
  const std::string kv = KvPath(datadir_);
  auto it = table->NewIterator(false);
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
    BlobGarbage& r = (*refs)[bi.file_number];
    r.records++;
    r.bytes += BlobRecordSize(ik.user_key.size(), bi.value_size);
  }
  if (!it->status().ok()) Problem(path + ": " + it->status().ToString(), Fix::kNever);
}

// sorted: the readable tables of a level >= 1 (sorted here), which must not
// overlap.
void Checker::CheckLevelOverlaps(int level, std::vector<const FileMetaData*> sorted) {
  static const InternalKeyComparator icmp(BytewiseComparator());
  const std::string kv = KvPath(datadir_);
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

}  // namespace fsck
}  // namespace mxfs
