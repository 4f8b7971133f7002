// AlignedBuffer: an owned heap buffer whose address and size are multiples
// of an alignment, for O_DIRECT I/O (kDirectIoAlignment covers the logical
// block size of every device we run on).
//
// Thread-safety: a value owned by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace mxfs {

inline constexpr size_t kDirectIoAlignment = 4096;

inline uint64_t AlignDown(uint64_t v, uint64_t a) { return v & ~(a - 1); }
inline uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // size is rounded up to the alignment; data() is nullptr if allocation fails.
  explicit AlignedBuffer(size_t size, size_t alignment = kDirectIoAlignment)
      : size_(AlignUp(size, alignment)),
        data_(static_cast<char*>(std::aligned_alloc(alignment, AlignUp(size, alignment)))) {
    if (data_ == nullptr) size_ = 0;
  }

  char* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  size_t size_ = 0;
  std::unique_ptr<char, Free> data_;
};

}  // namespace mxfs
