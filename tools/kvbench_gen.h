// kvbench's workload generation: the db_bench key layout, the value bytes,
// and the Zipfian choice behind YCSB D's "latest" distribution.
//
// Thread-safety: GenerateKey is a pure function; ValueGenerator and Zipfian
// are owned by one benchmark thread each.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/random.h"
#include "base/slice.h"

namespace mxfs::kvbench {

constexpr double kCompressionRatio = 0.5;  // db_bench's --compression_ratio default

// Writes key number v into key[0..size): the number as 8 big-endian bytes
// (only the low size bytes if size < 8), padded with '0' characters, as
// db_bench's GenerateKeyFromInt without a prefix. fillseq so writes in key
// order.
inline void GenerateKey(uint64_t v, char* key, size_t size) {
  const size_t fill = size < 8 ? size : 8;
  for (size_t i = 0; i < fill; i++) key[i] = static_cast<char>((v >> ((fill - i - 1) * 8)) & 0xff);
  if (size > fill) std::memset(key + fill, '0', size - fill);
}

// Printable, half-compressible value bytes built like db_bench's
// RandomGenerator: a 1 MiB buffer in which every 100-byte piece repeats a
// random 50-byte string; values are cut from it in turn.
// Thread-safety: not thread-safe; one per benchmark thread.
class ValueGenerator {
 public:
  explicit ValueGenerator(size_t value_size) {
    Random rnd(301);
    const size_t total = value_size > (1u << 20) ? value_size : (1u << 20);
    data_.reserve(total + 100);
    std::string piece;
    while (data_.size() < total) {
      const size_t raw = static_cast<size_t>(100 * kCompressionRatio);
      piece.clear();
      for (size_t i = 0; i < raw; i++) piece.push_back(static_cast<char>(' ' + rnd.Uniform(95)));
      for (size_t i = 0; i < 100; i++) data_.push_back(piece[i % raw]);
    }
  }
  Slice Generate(size_t len) {
    if (pos_ + len > data_.size()) pos_ = 0;
    Slice s(data_.data() + pos_, len);
    pos_ += len;
    return s;
  }

 private:
  std::string data_;
  size_t pos_ = 0;
};

// A uniform double in [0, 1) from rnd's next 53 bits.
inline double UniformDouble(Random& rnd) { return static_cast<double>(rnd.Next() >> 11) * 0x1.0p-53; }

// Zipfian choice of an item in [0, n), item 0 the most popular, with YCSB's
// constant 0.99, by the method of Gray et al. ("Quickly generating
// billion-record synthetic databases", SIGMOD 1994) that YCSB's
// ZipfianGenerator uses. n may grow between calls (YCSB D's inserts): the
// normalising sum zeta(n) is then extended by the new terms only, so a
// growing n costs O(growth), not O(n).
// Thread-safety: not thread-safe; one per benchmark thread.
class Zipfian {
 public:
  static constexpr double kTheta = 0.99;

  // zeta(n) = sum over i in [1, n] of 1 / i^theta; O(n).
  static double Zeta(uint64_t from, uint64_t to, double sum) {
    for (uint64_t i = from + 1; i <= to; i++) sum += 1.0 / std::pow(static_cast<double>(i), kTheta);
    return sum;
  }

  // zeta_n is Zeta(0, n, 0), precomputed by the caller so that several
  // threads can share one O(n) sum.
  Zipfian(uint64_t n, double zeta_n) : n_(n), zeta_n_(zeta_n) { SetEta(); }

  // An item in [0, n); n must not shrink between calls.
  uint64_t Next(Random& rnd, uint64_t n) {
    if (n <= 1) return 0;
    if (n > n_) {
      zeta_n_ = Zeta(n_, n, zeta_n_);
      n_ = n;
      SetEta();
    }
    const double u = UniformDouble(rnd);
    const double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, kTheta)) return 1;
    const uint64_t v = static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, kAlpha));
    return v < n_ ? v : n_ - 1;
  }

 private:
  void SetEta() {
    if (n_ <= 1) return;
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n_), 1.0 - kTheta)) / (1.0 - kZeta2 / zeta_n_);
  }

  static constexpr double kAlpha = 1.0 / (1.0 - kTheta);
  static inline const double kZeta2 = 1.0 + std::pow(0.5, kTheta);
  uint64_t n_;
  double zeta_n_;
  double eta_ = 0;
};

}  // namespace mxfs::kvbench
