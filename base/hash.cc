#include "base/hash.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

// libxxhash's runtime-dispatched XXH3 (xxh_x86dispatch: AVX2 or AVX-512
// where the CPU has them, SSE2 otherwise), when the installed library was
// built with it (Debian's is); weak, so that a library without it still
// links and the plain functions are used. Same results as XXH3_64bits:
// only the speed differs (a 4 KiB block or blob record hashed in ~115 ns
// instead of ~295 ns with SSE2 on the bench machine; every read of a table
// block or a blob value checks one).
extern "C" {
XXH64_hash_t XXH3_64bits_dispatch(const void* input, size_t len) __attribute__((weak));
XXH_errorcode XXH3_64bits_update_dispatch(XXH3_state_t* state, const void* input, size_t len) __attribute__((weak));
}

namespace mxfs {

namespace {

// Below this, XXH3 runs no vector loop: the dispatch's indirect call is
// pure overhead.
constexpr size_t kDispatchMin = 512;

}  // namespace

uint64_t Hash64(const void* data, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(data, n, seed); }

uint32_t Checksum32(const void* data, size_t n) {
  if (n >= kDispatchMin && XXH3_64bits_dispatch != nullptr) {
    return static_cast<uint32_t>(XXH3_64bits_dispatch(data, n));
  }
  return static_cast<uint32_t>(XXH3_64bits(data, n));
}

uint32_t Checksum32(const void* a, size_t na, const void* b, size_t nb) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  if (XXH3_64bits_update_dispatch != nullptr && na + nb >= kDispatchMin) {
    XXH3_64bits_update_dispatch(&st, a, na);
    XXH3_64bits_update_dispatch(&st, b, nb);
  } else {
    XXH3_64bits_update(&st, a, na);
    XXH3_64bits_update(&st, b, nb);
  }
  return static_cast<uint32_t>(XXH3_64bits_digest(&st));
}

}  // namespace mxfs
