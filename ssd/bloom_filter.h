// Bloom filter over a whole table: the filter block of an SSTable.
//
// Format: the bit array (ceil(bits/8) bytes, bit i is byte i/8, mask
// 1 << (i%8)) followed by one byte holding k, the number of probes. The
// number of bits is 8 * (length - 1). Each key is hashed once with
// Hash64(filter_key(key)); probe j (0 <= j < k) sets bit
//   (h1 + j * h2) mod bits,  h1 = low 32 bits of h, h2 = (h >> 32) | 1
// computed in 64-bit arithmetic (double hashing, Kirsch-Mitzenmacher).
// k = round(bits_per_key * 0.69) clamped to 1..30.
//
// Thread-safety: the builder is used by one thread; BloomMayMatch is a pure
// function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/slice.h"

namespace mxfs {

class BloomFilterBuilder {
 public:
  explicit BloomFilterBuilder(int bits_per_key) : bits_per_key_(bits_per_key) {}
  // Adds the hash of a key (consecutive duplicates are added once).
  void AddKey(const Slice& filter_key);
  size_t num_keys() const { return hashes_.size(); }
  // Builds the filter over every key added so far.
  std::string Finish() const;

 private:
  int bits_per_key_;
  std::vector<uint64_t> hashes_;
};

// k for a given bits_per_key.
int BloomProbes(int bits_per_key);
// False means filter_key was certainly not added. A malformed filter (empty,
// or k outside 1..30) matches everything, so a damaged filter costs reads,
// never answers.
bool BloomMayMatch(const Slice& filter, const Slice& filter_key);

}  // namespace mxfs
