#include "base/comparator.h"

#include <algorithm>

namespace mxfs {
namespace {

class BytewiseComparatorImpl final : public Comparator {
 public:
  int Compare(const Slice& a, const Slice& b) const override { return a.compare(b); }
  const char* Name() const override { return "mxfs.Bytewise"; }
  void FindShortestSeparator(std::string* start, const Slice& limit) const override {
    size_t min_length = std::min(start->size(), limit.size());
    size_t diff = 0;
    while (diff < min_length && (*start)[diff] == limit[diff]) diff++;
    if (diff >= min_length) return;  // one is a prefix of the other
    auto byte = static_cast<unsigned char>((*start)[diff]);
    if (byte < 0xff && byte + 1 < static_cast<unsigned char>(limit[diff])) {
      (*start)[diff]++;
      start->resize(diff + 1);
    }
  }
  void FindShortSuccessor(std::string* key) const override {
    for (size_t i = 0; i < key->size(); i++) {
      auto byte = static_cast<unsigned char>((*key)[i]);
      if (byte != 0xff) {
        (*key)[i] = static_cast<char>(byte + 1);
        key->resize(i + 1);
        return;
      }
    }
  }
};

}  // namespace

const Comparator* BytewiseComparator() {
  static const BytewiseComparatorImpl kInstance;
  return &kInstance;
}

}  // namespace mxfs
