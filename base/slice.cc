#include "base/slice.h"

#include <cstdio>

namespace mxfs {

std::string Slice::ToEscaped(size_t max_len) const {
  std::string out;
  size_t n = size_ < max_len ? size_ : max_len;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = static_cast<unsigned char>(data_[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (n < size_) out += "...";
  return out;
}

}  // namespace mxfs
