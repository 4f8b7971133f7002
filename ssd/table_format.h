// On-disk pieces of an SSTable shared by TableBuilder and Table: block
// handles, block trailers, the properties section and the footer. The full
// byte-level specification is in man/matrixfs.5 ("SSTABLE FORMAT"); in short:
//
//   [data block + trailer]*  [filter block + trailer]?  [properties + trailer]
//   [index block + trailer]  footer (64 bytes)
//
// Every block is followed by a 5-byte trailer: a type byte (BlockType) and
// fixed32 Checksum32 over the block contents and the type byte. A
// BlockHandle (offset, size) locates a block's contents; size excludes the
// trailer.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "base/slice.h"
#include "base/status.h"
#include "ssd/file_system.h"

namespace mxfs {

struct TableProperties;

inline constexpr uint64_t kTableMagic = 0x314C4254'5346584DULL;  // "MXFSTBL1" in file byte order
inline constexpr uint32_t kTableFormatVersion = 1;
inline constexpr size_t kBlockTrailerSize = 5;

enum class BlockType : uint8_t {
  kData = 1,
  kIndex = 2,
  kFilter = 3,
  kProperties = 4,
};
const char* BlockTypeName(BlockType t);

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;  // contents only, without the trailer

  // Index entries store handles as varint64 offset, varint64 size.
  void EncodeTo(std::string* dst) const;
  bool DecodeFrom(Slice* input);
};

// The fixed-size footer at the end of every table. All fields little-endian.
struct Footer {
  static constexpr size_t kEncodedLength = 64;
  BlockHandle filter;      // size 0: no filter block
  BlockHandle properties;
  BlockHandle index;
  uint32_t format_version = kTableFormatVersion;

  // offset 0: filter.offset, 8: filter.size, 16: properties.offset,
  // 24: properties.size, 32: index.offset, 40: index.size (fixed64 each),
  // 48: fixed32 format_version, 52: fixed32 Checksum32 of bytes 0..51,
  // 56: fixed64 kTableMagic.
  void EncodeTo(std::string* dst) const;
  // where names the file and offset for messages.
  Status DecodeFrom(const Slice& input, const std::string& where);
};
static_assert(Footer::kEncodedLength == 6 * 8 + 4 + 4 + 8, "footer layout");

// The properties block: varint64 num_entries, num_data_blocks,
// raw_key_bytes, raw_value_bytes, data_bytes; varint32 bloom_bits_per_key;
// then smallest_key, largest_key and comparator_name, each as a varint32
// length and the bytes. Readers ignore bytes after these fields, so later
// versions may append more.
void EncodeProperties(const TableProperties& props, std::string* dst);
bool DecodeProperties(Slice input, TableProperties* props);

// Appends contents, its type byte and checksum to dst.
void AppendBlockTrailer(std::string* dst, const Slice& contents, BlockType type);

// Reads the block at handle from file into *contents (trailer stripped),
// checking that it lies below limit (the footer offset), has the expected type
// and, when verify is set, its checksum. Corruption names the file, the
// block's offset, and the expected and found values.
Status ReadBlock(const RandomAccessFile& file, const BlockHandle& handle, BlockType expected, uint64_t limit,
                 bool verify, std::string* contents);

}  // namespace mxfs
