#include "kvcore/include/write_batch.h"

#include <string>

#include "base/coding.h"
#include "kvcore/dbformat.h"
#include "kvcore/write_batch_internal.h"

namespace mxfs {

namespace {
constexpr size_t kHeader = 12;  // fixed64 sequence | fixed32 count
}

WriteBatch::WriteBatch() { Clear(); }

void WriteBatch::Clear() {
  rep_.clear();
  rep_.resize(kHeader);
}

uint32_t WriteBatch::Count() const { return DecodeFixed32(rep_.data() + 8); }
uint64_t WriteBatch::Sequence() const { return DecodeFixed64(rep_.data()); }
void WriteBatch::SetSequence(uint64_t seq) { EncodeFixed64(rep_.data(), seq); }

void WriteBatch::Put(const Slice& key, const Slice& value) {
  EncodeFixed32(rep_.data() + 8, Count() + 1);
  rep_.push_back(static_cast<char>(kTypeValue));
  PutLengthPrefixedSlice(&rep_, key);
  PutLengthPrefixedSlice(&rep_, value);
}

void WriteBatch::Delete(const Slice& key) {
  EncodeFixed32(rep_.data() + 8, Count() + 1);
  rep_.push_back(static_cast<char>(kTypeDeletion));
  PutLengthPrefixedSlice(&rep_, key);
}

void WriteBatch::Append(const WriteBatch& src) {
  EncodeFixed32(rep_.data() + 8, Count() + src.Count());
  rep_.append(src.rep_.data() + kHeader, src.rep_.size() - kHeader);
}

Status WriteBatch::SetRep(const Slice& contents) {
  if (contents.size() < kHeader) {
    return Status::Corruption("write batch of " + std::to_string(contents.size()) +
                              " bytes is shorter than its 12-byte header");
  }
  rep_.assign(contents.data(), contents.size());
  return Status::OK();
}

Status WriteBatch::Iterate(Handler* handler) const {
  if (rep_.size() < kHeader) {
    return Status::Corruption("write batch of " + std::to_string(rep_.size()) +
                              " bytes is shorter than its 12-byte header");
  }
  Slice input(rep_);
  input.remove_prefix(kHeader);
  uint32_t found = 0;
  while (!input.empty()) {
    const size_t offset = rep_.size() - input.size();
    const char tag = input[0];
    input.remove_prefix(1);
    Slice key, value;
    switch (tag) {
      case kTypeValue:
        if (!GetLengthPrefixedSlice(&input, &key) || !GetLengthPrefixedSlice(&input, &value)) {
          return Status::Corruption("write batch: truncated put record at offset " + std::to_string(offset));
        }
        handler->Put(key, value);
        break;
      case kTypeDeletion:
        if (!GetLengthPrefixedSlice(&input, &key)) {
          return Status::Corruption("write batch: truncated delete record at offset " + std::to_string(offset));
        }
        handler->Delete(key);
        break;
      default:
        return Status::Corruption("write batch: unknown record tag " +
                                  std::to_string(static_cast<unsigned char>(tag)) + " at offset " +
                                  std::to_string(offset));
    }
    found++;
  }
  if (found != Count()) {
    return Status::Corruption("write batch: header says " + std::to_string(Count()) + " records, found " +
                              std::to_string(found));
  }
  return Status::OK();
}

namespace {
class MemTableInserter final : public WriteBatch::Handler {
 public:
  MemTableInserter(SequenceNumber seq, MemTable* mem) : seq_(seq), mem_(mem) {}
  void Put(const Slice& key, const Slice& value) override { mem_->Add(seq_++, kTypeValue, key, value); }
  void Delete(const Slice& key) override { mem_->Add(seq_++, kTypeDeletion, key, Slice()); }

 private:
  SequenceNumber seq_;
  MemTable* mem_;
};

class ByteCounter final : public WriteBatch::Handler {
 public:
  void Put(const Slice& key, const Slice& value) override { bytes += key.size() + value.size(); }
  void Delete(const Slice& key) override { bytes += key.size(); }
  uint64_t bytes = 0;
};
}  // namespace

Status WriteBatchInternal::InsertInto(const WriteBatch& batch, MemTable* mem) {
  MemTableInserter inserter(batch.Sequence(), mem);
  return batch.Iterate(&inserter);
}

uint64_t WriteBatchInternal::UserBytes(const WriteBatch& batch) {
  ByteCounter c;
  batch.Iterate(&c).IgnoreError();  // a malformed batch counts what parsed
  return c.bytes;
}

}  // namespace mxfs
