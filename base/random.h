// Random: a small deterministic PRNG (xorshift64*) for tests, benchmarks and
// skiplist heights. Same seed, same sequence, on every machine.
//
// Thread-safety: not thread-safe; one per thread.
#pragma once

#include <cstdint>

namespace mxfs {

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed ? seed : 0x9E3779B97F4A7C15ull) {}
  uint64_t Next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }
  // Uniform in [0, n); n > 0.
  uint64_t Uniform(uint64_t n) { return Next() % n; }
  // True with probability 1/n.
  bool OneIn(uint64_t n) { return Uniform(n) == 0; }

 private:
  uint64_t state_;
};

}  // namespace mxfs
