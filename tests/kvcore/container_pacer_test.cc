#include "kvcore/container_pacer.h"

#include <catch2/catch.hpp>

namespace mxfs {
namespace {

constexpr uint64_t kW = 64 << 20;  // write buffer size
constexpr int64_t kMiB = 1 << 20;

TEST_CASE("ContainerPacer: no limit before any column compaction was measured") {
  ContainerPacer p;
  CHECK(p.AllowedRate(0, 3 * static_cast<int64_t>(kW), kW) == 0);
  p.Charge(1 << 20, p.AllowedRate(0, 0, kW), 1000);
  CHECK(p.DelayMicros(1000) == 0);
}

TEST_CASE("ContainerPacer: writers run free with 1.5 write buffers of headroom") {
  ContainerPacer p;
  p.RecordDrain(100 * kMiB, 1000000);  // 100 MiB/s
  CHECK(p.AllowedRate(5 * kW / 2, kW, kW) == 0);      // headroom exactly 1.5W
  CHECK(p.AllowedRate(5 * kW / 2, kW + 1, kW) > 0);   // just below: paced
}

TEST_CASE("ContainerPacer: at one write buffer of headroom writers match the drain") {
  ContainerPacer p;
  p.RecordDrain(100 * kMiB, 1000000);
  const double drain = p.drain_bytes_per_us();
  CHECK(drain == Approx(100.0 * kMiB / 1e6));
  CHECK(p.AllowedRate(2 * kW, kW, kW) == Approx(drain));
  CHECK(p.AllowedRate(kW + kW / 4 * 3, kW, kW) == Approx(drain * 0.75));
  // No room at all (or less than none): the floor, never zero.
  CHECK(p.AllowedRate(0, 2 * kW, kW) == Approx(drain * ContainerPacer::kMinFactor));
}

TEST_CASE("ContainerPacer: the drain rate is a moving average of column compactions") {
  ContainerPacer p;
  p.RecordDrain(100, 1);  // 100 bytes/us
  p.RecordDrain(0, 5);    // ignored: nothing freed
  p.RecordDrain(10, 0);   // ignored: no duration
  CHECK(p.drain_bytes_per_us() == Approx(100));
  p.RecordDrain(200, 1);
  CHECK(p.drain_bytes_per_us() == Approx((1 - ContainerPacer::kAlpha) * 100 + ContainerPacer::kAlpha * 200));
}

TEST_CASE("ContainerPacer: a writer ahead of the virtual clock waits the difference") {
  ContainerPacer p;
  const double rate = 10;  // bytes/us
  const uint64_t t0 = 1000000;
  p.Charge(1000, rate, t0);  // clock: t0 - burst + 100 us
  CHECK(p.DelayMicros(t0) == 0);  // within the burst allowance
  for (int i = 0; i < 40; i++) p.Charge(1000, rate, t0);  // 4100 us of writes at once
  const uint64_t d = p.DelayMicros(t0);
  CHECK(d == 4100 - ContainerPacer::kBurstMicros);
  CHECK(p.DelayMicros(t0 + d) == 0);  // after the wait the writer is on time
}

TEST_CASE("ContainerPacer: an idle period banks at most the burst allowance") {
  ContainerPacer p;
  p.Charge(1000, 10, 1000000);
  // Ten seconds later a large group arrives: it is charged from now - burst,
  // not from the old clock.
  const uint64_t later = 11000000;
  p.Charge(100000, 10, later);  // 10,000 us worth
  CHECK(p.DelayMicros(later) == 10000 - ContainerPacer::kBurstMicros);
}

TEST_CASE("ContainerPacer: a single wait is capped; unpaced writes clear the debt") {
  ContainerPacer p;
  p.Charge(uint64_t{1} << 30, 1, 5000);  // absurd debt
  CHECK(p.DelayMicros(5000) == ContainerPacer::kMaxWaitMicros);
  p.Charge(4096, 0, 6000);  // headroom came back: rate 0
  CHECK(p.DelayMicros(6000) == 0);
}

TEST_CASE("Pacing waits in quanta: a writer less than a quantum ahead runs on, one further ahead waits it all") {
  CHECK(QuantizedPaceWait(0) == 0);
  CHECK(QuantizedPaceWait(3) == 0);  // a few us: a sleep would last the timer slack
  CHECK(QuantizedPaceWait(kPaceQuantumMicros - 1) == 0);
  CHECK(QuantizedPaceWait(kPaceQuantumMicros) == kPaceQuantumMicros);
  CHECK(QuantizedPaceWait(7500) == 7500);
  // The rate is kept: a writer charged 4 us per write waits once per
  // quantum's worth of writes, the whole lag.
  ContainerPacer p;
  uint64_t now = 1000000, waits = 0, waited = 0;
  p.Charge(1, 1, now);  // starts the clock at now - burst + 1
  for (int i = 0; i < 10000; i++) {
    const uint64_t d = QuantizedPaceWait(p.DelayMicros(now));
    if (d > 0) {
      waits++;
      waited += d;
      now += d;
    }
    p.Charge(400, 100, now);  // 4 us per write, written in no time
  }
  CHECK(waits <= 40);                 // 40 ms owed in quanta of >= 1 ms
  CHECK(waited >= 40000 - ContainerPacer::kBurstMicros - kPaceQuantumMicros);
}

}  // namespace
}  // namespace mxfs
