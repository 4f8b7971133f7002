// Histogram: latency distribution of benchmark operations, printed in the
// same layout as RocksDB's db_bench so that kvbench and db_bench output can
// be compared line by line.
//
// Buckets: the upper limits are 1, 2, then each limit is 1.5x the previous
// one (computed in floating point, without rounding the running value) and
// shown with its two most significant digits only (3, 4, 6, 10, 15, 22, 34,
// 51, 76, 110, 170, ...) up to the largest uint64_t. A value v falls in the
// first bucket whose limit is >= v; bucket 0 is [0, 1], bucket b > 0 is
// (limit[b-1], limit[b]].
//
// Percentile p: walk the buckets until the cumulative count reaches
// count * p / 100, then interpolate linearly inside that bucket between its
// left and right limits, clamped to [min, max]. The median is P50. StdDev is
// the population standard deviation of the recorded values.
//
// ToString() prints, each line ending in '\n':
//   Count: N Average: A.AAAA  StdDev: S.SS
//   Min: m  Median: M.MMMM  Max: x
//   Percentiles: P50: .. P75: .. P99: .. P99.9: .. P99.99: ..
//   ------------------------------------------------------
//   [       0,       1 ]      791  39.550%  39.550% ########
//   (       1,       2 ]     1006  50.300%  89.850% ##########
// one row per non-empty bucket: count, share, cumulative share, and one '#'
// per 5% of the count.
//
// Thread-safety: not thread-safe; each benchmark thread owns one and the
// main thread merges them after the threads have joined.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mxfs {

class Histogram {
 public:
  Histogram();

  void Clear();
  void Add(uint64_t value);
  void Merge(const Histogram& other);

  uint64_t Count() const { return count_; }
  uint64_t Min() const { return count_ == 0 ? 0 : min_; }
  uint64_t Max() const { return count_ == 0 ? 0 : max_; }
  double Average() const;
  double StandardDeviation() const;
  double Median() const { return Percentile(50.0); }
  double Percentile(double p) const;
  std::string ToString() const;

  // The bucket limits described above (for tests and tools).
  static const std::vector<uint64_t>& BucketLimits();

 private:
  uint64_t count_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  double sum_ = 0;
  double sum_squares_ = 0;
  std::vector<uint64_t> buckets_;
};

}  // namespace mxfs
