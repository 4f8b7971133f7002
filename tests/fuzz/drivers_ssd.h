// Fuzz drivers for the SSD layer's readers: SSTables (Table) and single
// blocks (Block). Each Run* function takes one fuzz input (flags byte, then
// the payload; see fuzz_util.h), drives the reader through everything it
// offers and returns the first non-OK Status it met (OK if none). The
// libFuzzer targets ignore that Status; the regression tests check it.
//
// Flags for RunTable: bit 0 fixes the footer checksum and the checksums of
// the properties, index and filter blocks; bit 1 turns verify_checksums on
// (data blocks are then checked too); bit 2 reads through a block cache.
//
// Thread-safety: one call at a time per thread; no shared state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/coding.h"
#include "base/hash.h"
#include "ssd/block.h"
#include "ssd/block_cache.h"
#include "ssd/table.h"
#include "ssd/table_format.h"
#include "tests/fuzz/fuzz_util.h"

namespace mxfs::fuzz {

// Recomputes the checksums Table::Open always checks, where the footer's
// handles point inside the file.
inline void FixTableChecksums(std::string* f) {
  if (f->size() < Footer::kEncodedLength) return;
  char* footer = f->data() + f->size() - Footer::kEncodedLength;
  const uint64_t limit = f->size() - Footer::kEncodedLength;
  for (int h = 0; h < 3; h++) {
    uint64_t off = DecodeFixed64(footer + 16 * h), size = DecodeFixed64(footer + 16 * h + 8);
    if (h == 0 && size == 0) continue;  // no filter block
    if (off > limit || size > limit || off + size + kBlockTrailerSize > limit) continue;
    char* p = f->data() + off;
    EncodeFixed32(p + size + 1, Checksum32(p, size + 1));
  }
  EncodeFixed32(footer + 52, Checksum32(footer, 52));
}

inline Status RunTable(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  const uint8_t flags = data[0];
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (flags & kFixChecksums) FixTableChecksums(&file);
  std::unique_ptr<BlockCache> cache;
  TableOptions options;
  options.verify_checksums = (flags & 2) != 0;
  if (flags & 4) {
    cache = std::make_unique<BlockCache>(64 << 10, 1);
    options.block_cache = cache.get();
  }
  const uint64_t file_size = file.size();
  auto table = Table::Open(options, std::make_unique<StringRandomAccessFile>(std::move(file), "fuzz.sst"), file_size, 1);
  if (!table) return table.error();
  const Table& t = **table;
  Status first;
  std::vector<std::string> keys;
  {
    auto it = t.NewIterator();
    Note(&first, ExerciseIterator(it.get(), &keys));
  }
  keys.push_back(t.properties().smallest_key);
  keys.push_back(t.properties().largest_key);
  for (const std::string& k : keys) {
    Status s = t.Get(k, [](const Slice& key, const Slice& value) { (void)key.size(), (void)value.size(); });
    if (!s.IsNotFound()) Note(&first, std::move(s));
    (void)t.KeyMayMatch(k);
    (void)t.ApproximateOffsetOf(k);
  }
  Note(&first, t.VerifyAll());
  return first;
}

inline Status RunBlock(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  auto block = Block::Parse(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (!block) return block.error();
  auto it = Block::NewIterator(*block, BytewiseComparator());
  std::vector<std::string> keys;
  return ExerciseIterator(it.get(), &keys);
}

}  // namespace mxfs::fuzz
