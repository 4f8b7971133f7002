#include "kvcore/blob_store.h"

#include "base/coding.h"
#include "kvcore/filename.h"

namespace mxfs {

void BlobIndex::EncodeTo(std::string* dst) const {
  PutVarint64(dst, file_number);
  PutVarint64(dst, offset);
  PutVarint64(dst, value_size);
}

Status BlobIndex::DecodeFrom(const Slice& src) {
  Slice in = src;
  if (!GetVarint64(&in, &file_number) || !GetVarint64(&in, &offset) || !GetVarint64(&in, &value_size) ||
      !in.empty()) {
    return Status::Corruption("malformed blob index " + src.ToEscaped());
  }
  return Status::OK();
}

Result<std::shared_ptr<BlobFileReader>> BlobStore::Open(uint64_t number) {
  const std::string path = BlobFileName(ctx_->dbname, number);
  auto size = ctx_->fs->GetFileSize(path);
  if (!size) return Err(size.error().WithContext("a blob index names blob file " + std::to_string(number)));
  // One value per read: pread, as for table blocks (table_cache.cc).
  FileOptions fo = ctx_->file_options;
  fo.pread_single_reads = true;
  fo.mmap_reads = ctx_->options.mmap_reads;  // blob files never change either
  auto file = ctx_->fs->NewRandomAccessFile(path, fo);
  if (!file) return Err(file.error());
  auto reader = BlobFileReader::Open(std::move(*file), *size);
  if (!reader) return Err(reader.error());
  return std::shared_ptr<BlobFileReader>(std::move(*reader));
}

Status BlobStore::Read(const Slice& user_key, const Slice& encoded_index, std::string* value) {
  BlobIndex index;
  MXFS_RETURN_IF_ERROR(index.DecodeFrom(encoded_index));
  return Read(user_key, index, value);
}

Status BlobStore::Read(const Slice& user_key, const BlobIndex& index, std::string* value) {
  auto reader = readers_.FindOrOpen(index.file_number, [&] { return Open(index.file_number); });
  if (!reader) return reader.error();
  return (*reader)->Get(user_key, index.offset, index.value_size, value);
}

Status BlobStore::Read(const Slice& user_key, const BlobIndex& index, PinnableSlice* value) {
  auto reader = readers_.FindOrOpen(index.file_number, [&] { return Open(index.file_number); });
  if (!reader) {
    value->Reset();
    return reader.error();
  }
  std::string* buf = value->Buffer();
  Slice v;
  bool mapped = false;
  Status s = (*reader)->GetInPlace(user_key, index.offset, index.value_size, buf, &v, &mapped);
  if (!s.ok()) return s;
  if (!mapped) {
    value->SetFromBuffer(static_cast<size_t>(v.data() - buf->data()), v.size());
  } else {
    // In the mapping: the reader keeps it (shared_ptr<const void> aliases
    // the reader's own count, no allocation).
    value->Pin(v, std::shared_ptr<const void>(std::move(*reader)));
  }
  return Status::OK();
}

}  // namespace mxfs
