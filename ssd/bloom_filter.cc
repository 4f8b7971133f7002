#include "ssd/bloom_filter.h"

#include <algorithm>
#include <cmath>

#include "base/hash.h"

namespace mxfs {

int BloomProbes(int bits_per_key) {
  int k = static_cast<int>(std::lround(bits_per_key * 0.69));
  return std::clamp(k, 1, 30);
}

void BloomFilterBuilder::AddKey(const Slice& filter_key) {
  uint64_t h = Hash64(filter_key);
  if (!hashes_.empty() && hashes_.back() == h) return;
  hashes_.push_back(h);
}

std::string BloomFilterBuilder::Finish() const {
  const int k = BloomProbes(bits_per_key_);
  uint64_t bits = static_cast<uint64_t>(hashes_.size()) * static_cast<uint64_t>(std::max(bits_per_key_, 1));
  bits = std::max<uint64_t>(bits, 64);  // tiny tables would otherwise see a high false-positive rate
  const uint64_t bytes = (bits + 7) / 8;
  bits = bytes * 8;
  std::string out(bytes + 1, '\0');
  for (uint64_t h : hashes_) {
    const uint64_t h1 = h & 0xffffffffu;
    const uint64_t h2 = (h >> 32) | 1;
    for (int j = 0; j < k; j++) {
      const uint64_t bit = (h1 + static_cast<uint64_t>(j) * h2) % bits;
      out[bit / 8] = static_cast<char>(out[bit / 8] | (1 << (bit % 8)));
    }
  }
  out[bytes] = static_cast<char>(k);
  return out;
}

bool BloomMayMatch(const Slice& filter, const Slice& filter_key) {
  if (filter.size() < 2) return true;
  const int k = static_cast<unsigned char>(filter[filter.size() - 1]);
  if (k < 1 || k > 30) return true;
  const uint64_t bits = static_cast<uint64_t>(filter.size() - 1) * 8;
  const uint64_t h = Hash64(filter_key);
  const uint64_t h1 = h & 0xffffffffu;
  const uint64_t h2 = (h >> 32) | 1;
  for (int j = 0; j < k; j++) {
    const uint64_t bit = (h1 + static_cast<uint64_t>(j) * h2) % bits;
    if ((filter.udata()[bit / 8] & (1u << (bit % 8))) == 0) return false;
  }
  return true;
}

}  // namespace mxfs
