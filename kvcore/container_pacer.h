// ContainerPacer: keeps writers at the rate column compaction frees the
// matrix container once the container is close to full, so that they never
// run into a full container and wait for a whole column (or a whole drain)
// with nothing written meanwhile.
//
// Why: a writer fills a 64 MiB memtable in a fraction of a second; the
// container frees room only as fast as column compaction merges columns into
// L1 (on this machine bounded by the disk). Left alone, the writer fills the
// last free pages at full speed and then waits seconds for room: the
// throughput curve alternates between bursts and zero (the troughs the
// MatrixKV paper set out to remove). Pacing turns the same average rate into
// an even one.
//
// Model. Headroom H = free container bytes - bytes waiting to go in (the
// active and immutable memtables). The drain rate R is a moving average of
// container bytes freed per second of column compaction. While H >= 1.5W (W:
// the write buffer size) writers run free. Below, the allowed rate is
// R * clamp(H / W, kMinFactor, 1.5): at H = W writers match the drain, with
// less room they fall behind it and the headroom grows back, with more they
// may run ahead. The allowed rate is charged as a virtual clock: each write
// group of b bytes moves the clock by b / rate; a writer that is ahead of the
// clock waits the difference (once it is a pacing quantum,
// kPaceQuantumMicros; at most kMaxWaitMicros per write, so a stale
// rate never blocks a writer for long; the container-full wait stays the
// backstop). The clock may lag real time by at most kBurstMicros, so an idle
// period does not bank an unbounded burst.
//
// Thread-safety: not thread-safe; ContainerLevel0 (writers) and
// ColumnCompactor (RecordDrain) call it with the DB mutex held.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mxfs {

// Writer pacing pays in quanta: a writer less than kPaceQuantumMicros ahead
// of its schedule (either pacer's) runs on, one further ahead waits the
// whole lag at once. Why: a sleep of a few microseconds lasts the timer
// slack (50 us) plus the wake-up, so pacing each write by the few
// microseconds it is ahead made ~1,000-2,000 writes per million-key fill
// wait 64-128 us (2-5 ms asked in all, 100-190 ms slept; BENCHMARKS.md,
// issue 16 session 6, helper pace): those writes were the fill's P99.9.
// Paid in quanta the rate over a flush or a drain is the same, the writer
// is at most one quantum ahead, and a fill has tens of paced writes.
inline constexpr uint64_t kPaceQuantumMicros = 1000;
inline uint64_t QuantizedPaceWait(uint64_t lag_us) { return lag_us >= kPaceQuantumMicros ? lag_us : 0; }

class ContainerPacer {
 public:
  static constexpr double kMinFactor = 0.5;
  static constexpr double kFreeFactor = 1.5;  // headroom (in write buffers) above which writers run free
  static constexpr uint64_t kBurstMicros = 2000;
  static constexpr uint64_t kMaxWaitMicros = 20000;
  static constexpr double kAlpha = 0.3;  // weight of the newest drain sample

  // A column compaction freed `bytes` of the container in `micros`.
  void RecordDrain(uint64_t bytes, uint64_t micros) {
    if (bytes == 0 || micros == 0) return;
    const double r = static_cast<double>(bytes) / static_cast<double>(micros);
    drain_bytes_per_us_ = drain_bytes_per_us_ == 0 ? r : (1 - kAlpha) * drain_bytes_per_us_ + kAlpha * r;
  }
  double drain_bytes_per_us() const { return drain_bytes_per_us_; }

  // Bytes per microsecond writers may write now; 0: no limit.
  double AllowedRate(int64_t free_bytes, int64_t pending_bytes, uint64_t write_buffer_size) const {
    if (drain_bytes_per_us_ <= 0 || write_buffer_size == 0) return 0;
    const double w = static_cast<double>(write_buffer_size);
    const double headroom = static_cast<double>(free_bytes - pending_bytes);
    if (headroom >= kFreeFactor * w) return 0;
    return drain_bytes_per_us_ * std::clamp(headroom / w, kMinFactor, kFreeFactor);
  }

  // A write group of `bytes` went in at `now_us` while `rate` (AllowedRate)
  // applied: advances the virtual clock.
  void Charge(uint64_t bytes, double rate, uint64_t now_us) {
    if (rate <= 0) {
      clock_us_ = 0;  // unpaced: nothing owed
      return;
    }
    const double floor = static_cast<double>(now_us > kBurstMicros ? now_us - kBurstMicros : 0);
    clock_us_ = std::max(clock_us_, floor) + static_cast<double>(bytes) / rate;
  }

  // How long a writer arriving at now_us waits (0 if it is not ahead).
  uint64_t DelayMicros(uint64_t now_us) const {
    if (clock_us_ <= static_cast<double>(now_us)) return 0;
    return std::min<uint64_t>(kMaxWaitMicros, static_cast<uint64_t>(clock_us_ - static_cast<double>(now_us)));
  }

 private:
  double drain_bytes_per_us_ = 0;
  double clock_us_ = 0;
};

}  // namespace mxfs
