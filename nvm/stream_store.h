// StreamStore: a copy into the pool with non-temporal stores, for bytes
// nobody reads again soon: a WAL record's payload (read only by recovery)
// and a flushed value in a container row (read next by column compaction,
// a memtable's worth of data later). Plain stores would first read every
// destination line into the cache (the store's read for ownership) and
// leave it there dirty: per 4 KiB value put, 8 KiB of the writer's and the
// flush's copies pushed the readers' lines (blooms, index blocks, memtable
// nodes) out of the cache shared by both cores (issue 16).
//
// Ends with a store fence: the copied bytes are globally visible before any
// later store (the WAL's tail word, the row's metadata and the version that
// publishes it), as they would be with plain stores.
//
// Without SSE2 (a build for another architecture) it is a plain memcpy.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mxfs {

// Below this a plain copy: the fence and the partial lines at both ends
// would cost more than the cache lines saved.
inline constexpr size_t kStreamStoreMin = 1024;

inline void StreamStore(char* dst, const char* src, size_t n) {
#if !defined(__SSE2__)
  if (n > 0) std::memcpy(dst, src, n);
  return;
#else
  if (n < kStreamStoreMin) {
    if (n > 0) std::memcpy(dst, src, n);
    return;
  }
  const size_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  n -= head;
  for (; n >= 64; n -= 64, dst += 64, src += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
  }
  for (; n >= 16; n -= 16, dst += 16, src += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  }
  if (n > 0) std::memcpy(dst, src, n);
  _mm_sfence();
#endif
}

}  // namespace mxfs
