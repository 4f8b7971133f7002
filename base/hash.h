// Checksums and hashes (xxHash). Every on-media checksum in MatrixFS is
// Checksum32 (the low 32 bits of XXH3-64 over the covered bytes), so one
// function defines them all; Hash64 is for in-memory hashing and blooms.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/slice.h"

namespace mxfs {

uint64_t Hash64(const void* data, size_t n, uint64_t seed = 0);
inline uint64_t Hash64(const Slice& s, uint64_t seed = 0) { return Hash64(s.data(), s.size(), seed); }

uint32_t Checksum32(const void* data, size_t n);
inline uint32_t Checksum32(const Slice& s) { return Checksum32(s.data(), s.size()); }

// A checksum that covers two discontiguous ranges (e.g. a header and a payload).
uint32_t Checksum32(const void* a, size_t na, const void* b, size_t nb);

}  // namespace mxfs
