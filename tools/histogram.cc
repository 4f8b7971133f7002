#include "tools/histogram.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mxfs {

namespace {

std::vector<uint64_t> MakeLimits() {
  std::vector<uint64_t> limits = {1, 2};
  const double kMax = static_cast<double>(std::numeric_limits<uint64_t>::max());
  double running = 2;
  while ((running *= 1.5) <= kMax) {
    uint64_t v = static_cast<uint64_t>(running);
    // Keep two significant digits: 172 -> 170, 1139 -> 1100.
    uint64_t scale = 1;
    while (v / 10 > 10) {
      v /= 10;
      scale *= 10;
    }
    limits.push_back(v * scale);
  }
  return limits;
}

}  // namespace

const std::vector<uint64_t>& Histogram::BucketLimits() {
  static const std::vector<uint64_t> kLimits = MakeLimits();
  return kLimits;
}

Histogram::Histogram() : buckets_(BucketLimits().size(), 0) {}

void Histogram::Clear() {
  count_ = 0;
  min_ = 0;
  max_ = 0;
  sum_ = 0;
  sum_squares_ = 0;
  std::fill(buckets_.begin(), buckets_.end(), 0);
}

void Histogram::Add(uint64_t value) {
  const auto& limits = BucketLimits();
  size_t b = static_cast<size_t>(std::lower_bound(limits.begin(), limits.end(), value) - limits.begin());
  if (b >= buckets_.size()) b = buckets_.size() - 1;
  buckets_[b]++;
  if (count_ == 0 || value < min_) min_ = value;
  if (count_ == 0 || value > max_) max_ = value;
  count_++;
  const double d = static_cast<double>(value);
  sum_ += d;
  sum_squares_ += d * d;
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  if (count_ == 0 || other.min_ < min_) min_ = other.min_;
  if (count_ == 0 || other.max_ > max_) max_ = other.max_;
  count_ += other.count_;
  sum_ += other.sum_;
  sum_squares_ += other.sum_squares_;
  for (size_t b = 0; b < buckets_.size(); b++) buckets_[b] += other.buckets_[b];
}

double Histogram::Average() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }

double Histogram::StandardDeviation() const {
  if (count_ == 0) return 0.0;
  const double n = static_cast<double>(count_);
  const double variance = (sum_squares_ * n - sum_ * sum_) / (n * n);
  return variance > 0 ? std::sqrt(variance) : 0.0;
}

double Histogram::Percentile(double p) const {
  const auto& limits = BucketLimits();
  const double threshold = static_cast<double>(count_) * (p / 100.0);
  uint64_t cumulative = 0;
  for (size_t b = 0; b < buckets_.size(); b++) {
    cumulative += buckets_[b];
    if (static_cast<double>(cumulative) >= threshold) {
      const double left = b == 0 ? 0.0 : static_cast<double>(limits[b - 1]);
      const double right = static_cast<double>(limits[b]);
      const uint64_t left_sum = cumulative - buckets_[b];
      double pos = 0;
      if (buckets_[b] != 0) pos = (threshold - static_cast<double>(left_sum)) / static_cast<double>(buckets_[b]);
      double r = left + (right - left) * pos;
      r = std::max(r, static_cast<double>(Min()));
      r = std::min(r, static_cast<double>(Max()));
      return r;
    }
  }
  return static_cast<double>(Max());
}

std::string Histogram::ToString() const {
  const auto& limits = BucketLimits();
  std::string r;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "Count: %" PRIu64 " Average: %.4f  StdDev: %.2f\n", count_, Average(),
                StandardDeviation());
  r.append(buf);
  std::snprintf(buf, sizeof(buf), "Min: %" PRIu64 "  Median: %.4f  Max: %" PRIu64 "\n", Min(), Median(), Max());
  r.append(buf);
  std::snprintf(buf, sizeof(buf), "Percentiles: P50: %.2f P75: %.2f P99: %.2f P99.9: %.2f P99.99: %.2f\n",
                Percentile(50), Percentile(75), Percentile(99), Percentile(99.9), Percentile(99.99));
  r.append(buf);
  r.append("------------------------------------------------------\n");
  if (count_ == 0) return r;
  const double mult = 100.0 / static_cast<double>(count_);
  uint64_t cumulative = 0;
  for (size_t b = 0; b < buckets_.size(); b++) {
    if (buckets_[b] == 0) continue;
    cumulative += buckets_[b];
    std::snprintf(buf, sizeof(buf), "%c %7" PRIu64 ", %7" PRIu64 " ] %8" PRIu64 " %7.3f%% %7.3f%% ",
                  b == 0 ? '[' : '(', b == 0 ? uint64_t{0} : limits[b - 1], limits[b], buckets_[b],
                  mult * static_cast<double>(buckets_[b]), mult * static_cast<double>(cumulative));
    r.append(buf);
    // One mark per 5% of the operations, rounded.
    const size_t marks = static_cast<size_t>(mult * static_cast<double>(buckets_[b]) / 5 + 0.5);
    r.append(marks, '#');
    r.push_back('\n');
  }
  return r;
}

}  // namespace mxfs
