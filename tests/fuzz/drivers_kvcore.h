// Fuzz drivers for kvcore's decoders: the SSD WAL / MANIFEST record file
// (LogReader), MANIFEST records (VersionEdit) and WAL payloads (WriteBatch).
// Conventions as in drivers_ssd.h: Run* returns the first non-OK Status met.
//
// Flags: bit 0 makes RunLogReader recompute each record's checksum while the
// record lengths chain through the file.
//
// Thread-safety: one call at a time per thread; no shared state.
#pragma once

#include <memory>
#include <string>

#include "base/coding.h"
#include "base/hash.h"
#include "kvcore/include/write_batch.h"
#include "kvcore/log_reader.h"
#include "kvcore/log_writer.h"
#include "kvcore/version_edit.h"
#include "tests/fuzz/fuzz_util.h"

namespace mxfs::fuzz {

inline Status RunWriteBatch(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  struct Sink : WriteBatch::Handler {
    void Put(const Slice& k, const Slice& v) override { bytes += k.size() + v.size(); }
    void Delete(const Slice& k) override { bytes += k.size(); }
    size_t bytes = 0;
  } sink;
  WriteBatch b;
  MXFS_RETURN_IF_ERROR(b.SetRep(Slice(reinterpret_cast<const char*>(data) + 1, size - 1)));
  (void)b.Count();
  (void)b.Sequence();
  return b.Iterate(&sink);
}

// Decodes, and for a record that decodes, checks that encoding it again
// gives a record that decodes to the same encoding.
inline Status DecodeVersionEdit(const Slice& in) {
  VersionEdit e;
  MXFS_RETURN_IF_ERROR(e.DecodeFrom(in));
  (void)e.DebugString();
  std::string enc, enc2;
  e.EncodeTo(&enc);
  VersionEdit e2;
  FuzzCheck(e2.DecodeFrom(enc).ok(), "a re-encoded VersionEdit decodes");
  e2.EncodeTo(&enc2);
  FuzzCheck(enc == enc2, "VersionEdit encoding is stable across a decode");
  return Status::OK();
}

inline Status RunVersionEdit(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  return DecodeVersionEdit(Slice(reinterpret_cast<const char*>(data) + 1, size - 1));
}

inline void FixLogChecksums(std::string* f) {
  size_t pos = 0;
  while (f->size() - pos >= kLogHeaderSize) {
    char* h = f->data() + pos;
    const uint32_t len = DecodeFixed32(h + 4);
    if (len > f->size() - pos - kLogHeaderSize) return;
    EncodeFixed32(h, Checksum32(h + 4, 4, h + kLogHeaderSize, len));
    pos += kLogHeaderSize + len;
  }
}

// Reads every record and decodes it both as a MANIFEST record and as a WAL
// payload (the same reader serves both files). Only the reader's own status
// is returned; payload errors are the other drivers' concern.
inline Status RunLogReader(const uint8_t* data, size_t size) {
  if (size == 0) return Status::OK();
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & kFixChecksums) FixLogChecksums(&file);
  LogReader reader(std::make_unique<StringSequentialFile>(std::move(file), "fuzz.log"));
  Slice record;
  std::string scratch;
  while (reader.ReadRecord(&record, &scratch)) {
    DecodeVersionEdit(record).IgnoreError();  // not every record is an edit
    if (record.size() >= 1) {
      std::string batch = "\x01" + record.ToString();
      RunWriteBatch(reinterpret_cast<const uint8_t*>(batch.data()), batch.size()).IgnoreError();
    }
  }
  (void)reader.DroppedBytes();
  (void)reader.LastRecordEnd();
  return reader.status();
}

}  // namespace mxfs::fuzz
