// Integer and length-prefixed encodings used by every on-media format.
//
// Fixed32/Fixed64 are little-endian (record and block formats); BigEndian*
// are for keys, so that integers sort numerically as bytes. Varints are
// LevelDB's base-128 encoding. Get* functions consume from the front of the
// Slice and return false when the input is short or malformed; they never
// read past the Slice.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <bit>
#include <cstring>
#include <string>

#include "base/slice.h"

namespace mxfs {

inline void EncodeFixed16(char* dst, uint16_t v) { std::memcpy(dst, &v, 2); }
inline void EncodeFixed32(char* dst, uint32_t v) { std::memcpy(dst, &v, 4); }
inline void EncodeFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, 8); }
inline uint16_t DecodeFixed16(const char* p) { uint16_t v; std::memcpy(&v, p, 2); return v; }
inline uint32_t DecodeFixed32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t DecodeFixed64(const char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
static_assert(std::endian::native == std::endian::little, "MatrixFS formats assume a little-endian host");

inline void EncodeBigEndian32(char* dst, uint32_t v) { v = __builtin_bswap32(v); std::memcpy(dst, &v, 4); }
inline void EncodeBigEndian64(char* dst, uint64_t v) { v = __builtin_bswap64(v); std::memcpy(dst, &v, 8); }
inline uint32_t DecodeBigEndian32(const char* p) { uint32_t v; std::memcpy(&v, p, 4); return __builtin_bswap32(v); }
inline uint64_t DecodeBigEndian64(const char* p) { uint64_t v; std::memcpy(&v, p, 8); return __builtin_bswap64(v); }
// The first 8 bytes of s as a big-endian number, zero-padded when s is
// shorter: numbers order as the bytes do, up to ties (a short s ties with
// its zero-extended forms).
inline uint64_t BigEndianPrefix64(const Slice& s) {
  char b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(b, s.data(), s.size() < 8 ? s.size() : 8);
  return DecodeBigEndian64(b);
}

void PutFixed32(std::string* dst, uint32_t v);
void PutFixed64(std::string* dst, uint64_t v);
void PutBigEndian32(std::string* dst, uint32_t v);
void PutBigEndian64(std::string* dst, uint64_t v);
void PutVarint32(std::string* dst, uint32_t v);
void PutVarint64(std::string* dst, uint64_t v);
// varint32 length, then the bytes.
void PutLengthPrefixedSlice(std::string* dst, const Slice& value);

bool GetFixed32(Slice* input, uint32_t* v);
bool GetFixed64(Slice* input, uint64_t* v);
bool GetBigEndian64(Slice* input, uint64_t* v);
bool GetVarint32(Slice* input, uint32_t* v);
bool GetVarint64(Slice* input, uint64_t* v);
bool GetLengthPrefixedSlice(Slice* input, Slice* result);

// Pointer-based forms: decode from [p, limit); return the byte after the
// value, or nullptr when the input is short or malformed.
const char* GetVarint32Ptr(const char* p, const char* limit, uint32_t* v);
const char* GetVarint64Ptr(const char* p, const char* limit, uint64_t* v);

int VarintLength(uint64_t v);
char* EncodeVarint32(char* dst, uint32_t v);
char* EncodeVarint64(char* dst, uint64_t v);

}  // namespace mxfs
