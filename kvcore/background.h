// What the engine's background threads share: the monotonic clock in
// microseconds that stall, pacing and compaction timings use, and the I/O
// priority a background thread gives itself.
//
// Thread-safety: thread-safe; SetIoPriority affects the calling thread only.
#pragma once

#include <cstdint>

namespace mxfs {

// Microseconds of the monotonic clock.
uint64_t NowMicros();

enum class IoPriority {
  kLowest,  // best-effort class, lowest level: behind foreground reads and WAL syncs
  kIdle,    // idle class: only when nobody else uses the disk
};
// ioprio_set on the calling thread; harmless if refused.
void SetIoPriority(IoPriority p);

}  // namespace mxfs
