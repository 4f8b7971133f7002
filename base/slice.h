// Slice: a non-owning reference to bytes (pointer + length), as in LevelDB.
//
// Thread-safety: a value type; the referenced bytes must outlive it.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace mxfs {

class Slice {
 public:
  constexpr Slice() noexcept : data_(""), size_(0) {}
  constexpr Slice(const char* d, size_t n) noexcept : data_(d), size_(n) {}
  Slice(const std::string& s) noexcept : data_(s.data()), size_(s.size()) {}  // NOLINT: implicit by design
  constexpr Slice(std::string_view s) noexcept : data_(s.data()), size_(s.size()) {}  // NOLINT
  Slice(const char* s) noexcept : data_(s), size_(std::strlen(s)) {}  // NOLINT

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const unsigned char* udata() const { return reinterpret_cast<const unsigned char*>(data_); }

  char operator[](size_t n) const {
    assert(n < size_);
    return data_[n];
  }

  void clear() {
    data_ = "";
    size_ = 0;
  }
  void remove_prefix(size_t n) {
    assert(n <= size_);
    data_ += n;
    size_ -= n;
  }
  void remove_suffix(size_t n) {
    assert(n <= size_);
    size_ -= n;
  }

  std::string ToString() const { return std::string(data_, size_); }
  std::string_view view() const { return std::string_view(data_, size_); }
  // Printable form for error messages: bytes outside 0x20..0x7e as \xNN.
  std::string ToEscaped(size_t max_len = 64) const;

  // <0, 0, >0 as memcmp order with shorter-is-smaller.
  int compare(const Slice& b) const {
    const size_t min_len = size_ < b.size_ ? size_ : b.size_;
    int r = min_len ? std::memcmp(data_, b.data_, min_len) : 0;
    if (r == 0) {
      if (size_ < b.size_) r = -1;
      else if (size_ > b.size_) r = +1;
    }
    return r;
  }
  bool starts_with(const Slice& x) const {
    return size_ >= x.size_ && (x.size_ == 0 || std::memcmp(data_, x.data_, x.size_) == 0);
  }

 private:
  const char* data_;
  size_t size_;
};

inline bool operator==(const Slice& x, const Slice& y) {
  return x.size() == y.size() && (x.size() == 0 || std::memcmp(x.data(), y.data(), x.size()) == 0);
}
inline bool operator!=(const Slice& x, const Slice& y) { return !(x == y); }
inline bool operator<(const Slice& x, const Slice& y) { return x.compare(y) < 0; }

}  // namespace mxfs
