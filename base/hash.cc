#include "base/hash.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace mxfs {

uint64_t Hash64(const void* data, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(data, n, seed); }

uint32_t Checksum32(const void* data, size_t n) { return static_cast<uint32_t>(XXH3_64bits(data, n)); }

uint32_t Checksum32(const void* a, size_t na, const void* b, size_t nb) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, a, na);
  XXH3_64bits_update(&st, b, nb);
  return static_cast<uint32_t>(XXH3_64bits_digest(&st));
}

}  // namespace mxfs
