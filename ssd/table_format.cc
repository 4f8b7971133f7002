#include "ssd/table_format.h"

#include <cstdio>
#include <cstring>

#include "base/coding.h"
#include "base/hash.h"
#include "ssd/table.h"

namespace mxfs {

namespace {

std::string Hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

std::string Hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

const char* BlockTypeName(BlockType t) {
  switch (t) {
    case BlockType::kData: return "data";
    case BlockType::kIndex: return "index";
    case BlockType::kFilter: return "filter";
    case BlockType::kProperties: return "properties";
  }
  return "unknown";
}

void BlockHandle::EncodeTo(std::string* dst) const {
  PutVarint64(dst, offset);
  PutVarint64(dst, size);
}

bool BlockHandle::DecodeFrom(Slice* input) { return GetVarint64(input, &offset) && GetVarint64(input, &size); }

void Footer::EncodeTo(std::string* dst) const {
  const size_t start = dst->size();
  PutFixed64(dst, filter.offset);
  PutFixed64(dst, filter.size);
  PutFixed64(dst, properties.offset);
  PutFixed64(dst, properties.size);
  PutFixed64(dst, index.offset);
  PutFixed64(dst, index.size);
  PutFixed32(dst, format_version);
  PutFixed32(dst, Checksum32(dst->data() + start, 52));
  PutFixed64(dst, kTableMagic);
}

Status Footer::DecodeFrom(const Slice& input, const std::string& where) {
  if (input.size() != kEncodedLength) {
    return Status::Corruption(where + ": footer is " + std::to_string(input.size()) + " bytes, expected " +
                              std::to_string(kEncodedLength));
  }
  const char* p = input.data();
  const uint64_t magic = DecodeFixed64(p + 56);
  if (magic != kTableMagic) {
    return Status::Corruption(where + ": not a table: bad magic number, expected " + Hex64(kTableMagic) + ", found " +
                              Hex64(magic));
  }
  const uint32_t stored = DecodeFixed32(p + 52);
  const uint32_t actual = Checksum32(p, 52);
  if (stored != actual) {
    return Status::Corruption(where + ": footer checksum mismatch: stored " + Hex32(stored) + ", computed " +
                              Hex32(actual));
  }
  format_version = DecodeFixed32(p + 48);
  if (format_version != kTableFormatVersion) {
    return Status::Corruption(where + ": unsupported table format version " + std::to_string(format_version) +
                              ", expected " + std::to_string(kTableFormatVersion));
  }
  filter = {DecodeFixed64(p), DecodeFixed64(p + 8)};
  properties = {DecodeFixed64(p + 16), DecodeFixed64(p + 24)};
  index = {DecodeFixed64(p + 32), DecodeFixed64(p + 40)};
  return Status::OK();
}

void EncodeProperties(const TableProperties& p, std::string* dst) {
  PutVarint64(dst, p.num_entries);
  PutVarint64(dst, p.num_data_blocks);
  PutVarint64(dst, p.raw_key_bytes);
  PutVarint64(dst, p.raw_value_bytes);
  PutVarint64(dst, p.data_bytes);
  PutVarint32(dst, p.bloom_bits_per_key);
  PutLengthPrefixedSlice(dst, p.smallest_key);
  PutLengthPrefixedSlice(dst, p.largest_key);
  PutLengthPrefixedSlice(dst, p.comparator_name);
}

bool DecodeProperties(Slice in, TableProperties* p) {
  Slice smallest, largest, cmp;
  if (!GetVarint64(&in, &p->num_entries) || !GetVarint64(&in, &p->num_data_blocks) ||
      !GetVarint64(&in, &p->raw_key_bytes) || !GetVarint64(&in, &p->raw_value_bytes) ||
      !GetVarint64(&in, &p->data_bytes) || !GetVarint32(&in, &p->bloom_bits_per_key) ||
      !GetLengthPrefixedSlice(&in, &smallest) || !GetLengthPrefixedSlice(&in, &largest) ||
      !GetLengthPrefixedSlice(&in, &cmp)) {
    return false;
  }
  p->smallest_key = smallest.ToString();
  p->largest_key = largest.ToString();
  p->comparator_name = cmp.ToString();
  return true;
}

void AppendBlockTrailer(std::string* dst, const Slice& contents, BlockType type) {
  const char type_byte = static_cast<char>(type);
  dst->push_back(type_byte);
  PutFixed32(dst, Checksum32(contents.data(), contents.size(), &type_byte, 1));
}

Status ReadBlock(const RandomAccessFile& file, const BlockHandle& handle, BlockType expected, uint64_t limit,
                 bool verify, std::string* contents) {
  auto where = [&] {
    return file.path() + ": " + BlockTypeName(expected) + " block at offset " + std::to_string(handle.offset) +
           " (size " + std::to_string(handle.size) + ")";
  };
  if (handle.offset > limit || handle.size > limit || handle.offset + handle.size + kBlockTrailerSize > limit) {
    return Status::Corruption(where() + " runs past the block area ending at " + std::to_string(limit));
  }
  const size_t n = static_cast<size_t>(handle.size) + kBlockTrailerSize;
  // The read overwrites every byte: no zero-filling first (a 4 KiB memset per
  // Get showed in the readrandom profile).
  Slice got;
  Status s;
  // (The callback's size argument is not used: when the string grows,
  // g++ 12's libstdc++ passes the new capacity there instead of n.)
  contents->resize_and_overwrite(n, [&](char* buf, size_t) {
    s = file.Read(handle.offset, n, &got, buf);
    return s.ok() && got.size() == n ? n : 0;  // never expose unwritten bytes
  });
  if (!s.ok()) return s;
  if (got.size() != n) {
    return Status::Corruption(where() + ": truncated, expected " + std::to_string(n) + " bytes, read " +
                              std::to_string(got.size()));
  }
  if (got.data() != contents->data()) std::memcpy(contents->data(), got.data(), n);
  const char* p = contents->data();
  const auto type = static_cast<uint8_t>(p[handle.size]);
  if (type != static_cast<uint8_t>(expected)) {
    return Status::Corruption(where() + ": block type byte at offset " + std::to_string(handle.offset + handle.size) +
                              " is " + std::to_string(type) + ", expected " +
                              std::to_string(static_cast<int>(expected)));
  }
  if (verify) {
    const uint32_t stored = DecodeFixed32(p + handle.size + 1);
    const uint32_t actual = Checksum32(p, handle.size + 1);
    if (stored != actual) {
      return Status::Corruption(where() + ": block checksum mismatch: stored " + Hex32(stored) + ", computed " +
                                Hex32(actual));
    }
  }
  contents->resize(handle.size);
  return Status::OK();
}

}  // namespace mxfs
