#include "ssd/block.h"

#include "base/coding.h"

namespace mxfs {

Result<std::shared_ptr<const Block>> Block::Parse(std::string contents) {
  const size_t n = contents.size();
  if (n < 8) return Err(Status::Corruption("block of " + std::to_string(n) + " bytes is shorter than the 8-byte minimum"));
  const uint32_t num_restarts = DecodeFixed32(contents.data() + n - 4);
  const uint64_t max_restarts = (n - 4) / 4;
  if (num_restarts == 0 || num_restarts > max_restarts) {
    return Err(Status::Corruption("block restart count " + std::to_string(num_restarts) + " invalid for a block of " +
                                  std::to_string(n) + " bytes (expected 1.." + std::to_string(max_restarts) + ")"));
  }
  const uint32_t restart_offset = static_cast<uint32_t>(n - 4 - 4ull * num_restarts);
  uint32_t prev = 0;
  for (uint32_t i = 0; i < num_restarts; i++) {
    uint32_t r = DecodeFixed32(contents.data() + restart_offset + 4ull * i);
    if (r >= restart_offset && !(r == 0 && restart_offset == 0)) {
      return Err(Status::Corruption("block restart " + std::to_string(i) + " points at " + std::to_string(r) +
                                    ", past the entries ending at " + std::to_string(restart_offset)));
    }
    if (i > 0 && r <= prev) {
      return Err(Status::Corruption("block restart " + std::to_string(i) + " at " + std::to_string(r) +
                                    " does not follow restart " + std::to_string(i - 1) + " at " +
                                    std::to_string(prev)));
    }
    if (i == 0 && r != 0) return Err(Status::Corruption("block restart 0 is " + std::to_string(r) + ", expected 0"));
    prev = r;
  }
  return std::make_shared<const Block>(PrivateTag{}, std::move(contents), restart_offset, num_restarts);
}

// Iterates one block. Positions are byte offsets of entries; current_ ==
// restart_offset_ means !Valid(). Keys are rebuilt into key_ from the prefix
// compression; value_ points into the block.
class Block::Iter final : public Iterator {
 public:
  Iter(std::shared_ptr<const Block> block, const Comparator* cmp)
      : block_(std::move(block)),
        cmp_(cmp),
        data_(block_->data_.data()),
        restarts_(block_->restart_offset_),
        num_restarts_(block_->num_restarts_),
        current_(restarts_),
        restart_index_(num_restarts_) {}

  bool Valid() const override { return current_ < restarts_; }
  Status status() const override { return status_; }
  Slice key() const override { return Slice(key_); }
  Slice value() const override { return value_; }

  void Next() override { ParseNextKey(); }

  void Prev() override {
    const uint32_t original = current_;
    while (RestartPoint(restart_index_) >= original) {
      if (restart_index_ == 0) {  // no entry before the first
        current_ = restarts_;
        restart_index_ = num_restarts_;
        return;
      }
      restart_index_--;
    }
    SeekToRestartPoint(restart_index_);
    do {
      if (!ParseNextKey()) return;
    } while (NextEntryOffset() < original);
  }

  void Seek(const Slice& target) override {
    // Binary search for the last restart point whose key is < target.
    uint32_t left = 0;
    uint32_t right = num_restarts_ - 1;
    while (left < right) {
      uint32_t mid = (left + right + 1) / 2;
      uint32_t off = RestartPoint(mid);
      uint32_t shared, non_shared, value_len;
      const char* p = DecodeEntry(data_ + off, data_ + restarts_, &shared, &non_shared, &value_len);
      if (p == nullptr || shared != 0) {
        CorruptionAt(off, "restart entry does not decode as a whole key");
        return;
      }
      if (cmp_->Compare(Slice(p, non_shared), target) < 0) {
        left = mid;
      } else {
        right = mid - 1;
      }
    }
    SeekToRestartPoint(left);
    for (;;) {
      if (!ParseNextKey()) return;
      if (cmp_->Compare(Slice(key_), target) >= 0) return;
    }
  }

  void SeekToFirst() override {
    SeekToRestartPoint(0);
    ParseNextKey();
  }

  void SeekToLast() override {
    SeekToRestartPoint(num_restarts_ - 1);
    while (ParseNextKey() && NextEntryOffset() < restarts_) {
    }
  }

 private:
  uint32_t RestartPoint(uint32_t i) const { return DecodeFixed32(data_ + restarts_ + 4ull * i); }
  uint32_t NextEntryOffset() const { return static_cast<uint32_t>((value_.data() + value_.size()) - data_); }

  void SeekToRestartPoint(uint32_t i) {
    key_.clear();
    restart_index_ = i;
    // ParseNextKey starts at the end of value_.
    value_ = Slice(data_ + RestartPoint(i), 0);
  }

  // Decodes the three varints of an entry at p; nullptr if they or the bytes
  // they announce run past limit.
  static const char* DecodeEntry(const char* p, const char* limit, uint32_t* shared, uint32_t* non_shared,
                                 uint32_t* value_len) {
    if (limit - p < 3) return nullptr;
    *shared = static_cast<unsigned char>(p[0]);
    *non_shared = static_cast<unsigned char>(p[1]);
    *value_len = static_cast<unsigned char>(p[2]);
    if ((*shared | *non_shared | *value_len) < 128) {
      p += 3;  // fast path: all three fit in one byte
    } else {
      if ((p = GetVarint32Ptr(p, limit, shared)) == nullptr) return nullptr;
      if ((p = GetVarint32Ptr(p, limit, non_shared)) == nullptr) return nullptr;
      if ((p = GetVarint32Ptr(p, limit, value_len)) == nullptr) return nullptr;
    }
    if (static_cast<uint64_t>(limit - p) < static_cast<uint64_t>(*non_shared) + *value_len) return nullptr;
    return p;
  }

  void CorruptionAt(uint32_t off, const char* what) {
    current_ = restarts_;
    restart_index_ = num_restarts_;
    key_.clear();
    value_ = Slice();
    status_ = Status::Corruption(std::string(what) + " at block offset " + std::to_string(off));
  }

  bool ParseNextKey() {
    current_ = NextEntryOffset();
    if (current_ >= restarts_) {
      current_ = restarts_;
      restart_index_ = num_restarts_;
      return false;
    }
    uint32_t shared, non_shared, value_len;
    const char* p = DecodeEntry(data_ + current_, data_ + restarts_, &shared, &non_shared, &value_len);
    if (p == nullptr || key_.size() < shared) {
      CorruptionAt(current_, "malformed block entry");
      return false;
    }
    key_.resize(shared);
    key_.append(p, non_shared);
    value_ = Slice(p + non_shared, value_len);
    while (restart_index_ + 1 < num_restarts_ && RestartPoint(restart_index_ + 1) < current_) restart_index_++;
    return true;
  }

  std::shared_ptr<const Block> block_;
  const Comparator* const cmp_;
  const char* const data_;
  const uint32_t restarts_;
  const uint32_t num_restarts_;
  uint32_t current_;
  uint32_t restart_index_;
  std::string key_;
  Slice value_;
  Status status_;
};

std::unique_ptr<Iterator> Block::NewIterator(std::shared_ptr<const Block> block, const Comparator* cmp) {
  return std::make_unique<Iter>(std::move(block), cmp);
}

}  // namespace mxfs
