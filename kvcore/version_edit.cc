#include "kvcore/version_edit.h"

#include "base/coding.h"

namespace mxfs {

namespace {
enum Tag : uint32_t {
  kComparator = 1,
  kLogNumber = 2,
  kNextFileNumber = 3,
  kLastSequence = 4,
  kCompactPointer = 5,
  kDeletedFile = 6,
  kNewFile = 7,
  kLevel0State = 8,
  kNewBlobFile = 9,
  kBlobGarbage = 10,
  kNewFileWithBlobRefs = 11,
};
constexpr uint32_t kMaxLevels = 64;

bool GetInternalKey(Slice* input, InternalKey* dst) {
  Slice str;
  if (!GetLengthPrefixedSlice(input, &str) || str.size() < kInternalKeyTrailer) return false;
  dst->DecodeFrom(str);
  return true;
}
bool GetLevel(Slice* input, int* level) {
  uint32_t v;
  if (!GetVarint32(input, &v) || v >= kMaxLevels) return false;
  *level = static_cast<int>(v);
  return true;
}
// The reference list of tag 11: a count, then ascending numbers as deltas.
bool GetBlobRefs(Slice* input, std::vector<uint64_t>* refs) {
  uint32_t count;
  if (!GetVarint32(input, &count) || count > input->size()) return false;  // each delta takes >= 1 byte
  refs->clear();
  refs->reserve(count);
  uint64_t prev = 0;
  for (uint32_t i = 0; i < count; i++) {
    uint64_t delta;
    if (!GetVarint64(input, &delta) || delta == 0 || prev + delta < prev) return false;
    prev += delta;
    refs->push_back(prev);
  }
  return true;
}
}  // namespace

void VersionEdit::EncodeTo(std::string* dst) const {
  if (comparator_) {
    PutVarint32(dst, kComparator);
    PutLengthPrefixedSlice(dst, *comparator_);
  }
  if (log_number_) {
    PutVarint32(dst, kLogNumber);
    PutVarint64(dst, *log_number_);
  }
  if (next_file_number_) {
    PutVarint32(dst, kNextFileNumber);
    PutVarint64(dst, *next_file_number_);
  }
  if (last_sequence_) {
    PutVarint32(dst, kLastSequence);
    PutVarint64(dst, *last_sequence_);
  }
  for (const auto& [level, key] : compact_pointers_) {
    PutVarint32(dst, kCompactPointer);
    PutVarint32(dst, static_cast<uint32_t>(level));
    PutLengthPrefixedSlice(dst, key.Encode());
  }
  for (const auto& [level, number] : deleted_files_) {
    PutVarint32(dst, kDeletedFile);
    PutVarint32(dst, static_cast<uint32_t>(level));
    PutVarint64(dst, number);
  }
  for (const auto& [level, f] : new_files_) {
    PutVarint32(dst, f.blob_refs_known ? kNewFileWithBlobRefs : kNewFile);
    PutVarint32(dst, static_cast<uint32_t>(level));
    PutVarint64(dst, f.number);
    PutVarint64(dst, f.file_size);
    PutLengthPrefixedSlice(dst, f.smallest.Encode());
    PutLengthPrefixedSlice(dst, f.largest.Encode());
    PutVarint64(dst, f.smallest_seq);
    PutVarint64(dst, f.largest_seq);
    if (f.blob_refs_known) {
      PutVarint32(dst, static_cast<uint32_t>(f.blob_refs.size()));
      uint64_t prev = 0;
      for (uint64_t n : f.blob_refs) {
        PutVarint64(dst, n - prev);
        prev = n;
      }
    }
  }
  for (const BlobFileMeta& b : new_blob_files_) {
    PutVarint32(dst, kNewBlobFile);
    PutVarint64(dst, b.number);
    PutVarint64(dst, b.file_size);
    PutVarint64(dst, b.records);
    PutVarint64(dst, b.record_bytes);
  }
  for (const auto& [number, g] : blob_garbage_) {
    PutVarint32(dst, kBlobGarbage);
    PutVarint64(dst, number);
    PutVarint64(dst, g.records);
    PutVarint64(dst, g.bytes);
  }
  if (level0_state_) {
    PutVarint32(dst, kLevel0State);
    PutLengthPrefixedSlice(dst, *level0_state_);
  }
}

Status VersionEdit::DecodeFrom(const Slice& src) {
  Clear();
  Slice input = src;
  const char* msg = nullptr;
  uint32_t tag = 0;
  size_t field_offset = 0;
  while (msg == nullptr && !input.empty()) {
    field_offset = src.size() - input.size();
    if (!GetVarint32(&input, &tag)) {
      msg = "tag";
      break;
    }
    int level = 0;
    uint64_t number = 0;
    Slice str;
    InternalKey key;
    switch (tag) {
      case kComparator:
        if (GetLengthPrefixedSlice(&input, &str)) comparator_ = str.ToString();
        else msg = "comparator name";
        break;
      case kLogNumber:
        if (GetVarint64(&input, &number)) log_number_ = number;
        else msg = "log number";
        break;
      case kNextFileNumber:
        if (GetVarint64(&input, &number)) next_file_number_ = number;
        else msg = "next file number";
        break;
      case kLastSequence:
        if (GetVarint64(&input, &number)) last_sequence_ = number;
        else msg = "last sequence";
        break;
      case kCompactPointer:
        if (GetLevel(&input, &level) && GetInternalKey(&input, &key)) compact_pointers_.emplace_back(level, key);
        else msg = "compaction pointer";
        break;
      case kDeletedFile:
        if (GetLevel(&input, &level) && GetVarint64(&input, &number)) deleted_files_.insert({level, number});
        else msg = "deleted file";
        break;
      case kNewFile:
      case kNewFileWithBlobRefs: {
        FileMetaData f;
        if (GetLevel(&input, &level) && GetVarint64(&input, &f.number) && GetVarint64(&input, &f.file_size) &&
            GetInternalKey(&input, &f.smallest) && GetInternalKey(&input, &f.largest) &&
            GetVarint64(&input, &f.smallest_seq) && GetVarint64(&input, &f.largest_seq) &&
            (tag == kNewFile || GetBlobRefs(&input, &f.blob_refs))) {
          f.blob_refs_known = tag == kNewFileWithBlobRefs;
          new_files_.emplace_back(level, std::move(f));
        } else {
          msg = tag == kNewFile ? "new-file entry" : "new-file entry with blob references";
        }
        break;
      }
      case kLevel0State:
        if (GetLengthPrefixedSlice(&input, &str)) level0_state_ = str.ToString();
        else msg = "level0 state";
        break;
      case kNewBlobFile: {
        BlobFileMeta b;
        if (GetVarint64(&input, &b.number) && GetVarint64(&input, &b.file_size) && GetVarint64(&input, &b.records) &&
            GetVarint64(&input, &b.record_bytes)) {
          new_blob_files_.push_back(b);
        } else {
          msg = "new-blob-file entry";
        }
        break;
      }
      case kBlobGarbage: {
        BlobGarbage g;
        if (GetVarint64(&input, &number) && GetVarint64(&input, &g.records) && GetVarint64(&input, &g.bytes)) {
          // Encoders write one field per file; two are summed, and a sum
          // that wraps around 2^64 is malformed.
          const auto prev = blob_garbage_.find(number);
          if (prev != blob_garbage_.end() && (prev->second.records + g.records < g.records ||
                                              prev->second.bytes + g.bytes < g.bytes)) {
            msg = "blob-garbage entry";
          } else {
            AddBlobGarbage(number, g);
          }
        } else {
          msg = "blob-garbage entry";
        }
        break;
      }
      default:
        return Status::Corruption("version edit: unknown field tag " + std::to_string(tag) + " at byte " +
                                  std::to_string(field_offset));
    }
  }
  if (msg != nullptr) {
    return Status::Corruption(std::string("version edit: malformed ") + msg + " field at byte " +
                              std::to_string(field_offset));
  }
  return Status::OK();
}

std::string VersionEdit::DebugString() const {
  std::string r = "VersionEdit {";
  if (comparator_) r += "\n  comparator: " + *comparator_;
  if (log_number_) r += "\n  log number: " + std::to_string(*log_number_);
  if (next_file_number_) r += "\n  next file: " + std::to_string(*next_file_number_);
  if (last_sequence_) r += "\n  last sequence: " + std::to_string(*last_sequence_);
  for (const auto& [level, key] : compact_pointers_)
    r += "\n  compact pointer L" + std::to_string(level) + " " + key.DebugString();
  for (const auto& [level, number] : deleted_files_)
    r += "\n  remove L" + std::to_string(level) + " #" + std::to_string(number);
  for (const auto& [level, f] : new_files_) {
    r += "\n  add L" + std::to_string(level) + " #" + std::to_string(f.number) + " " + std::to_string(f.file_size) +
         " bytes [" + f.smallest.DebugString() + " .. " + f.largest.DebugString() + "]";
    if (!f.blob_refs_known) {
      r += " blobs ?";
    } else if (!f.blob_refs.empty()) {
      r += " blobs";
      for (uint64_t n : f.blob_refs) r += " #" + std::to_string(n);
    }
  }
  for (const BlobFileMeta& b : new_blob_files_) {
    r += "\n  add blob #" + std::to_string(b.number) + " " + std::to_string(b.records) + " records, " +
         std::to_string(b.file_size) + " bytes";
  }
  for (const auto& [number, g] : blob_garbage_) {
    r += "\n  blob #" + std::to_string(number) + " garbage +" + std::to_string(g.records) + " records, +" +
         std::to_string(g.bytes) + " bytes";
  }
  if (level0_state_) r += "\n  level0 state: " + std::to_string(level0_state_->size()) + " bytes";
  return r + "\n}";
}

}  // namespace mxfs
