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

Result<std::shared_ptr<BlobFileReader>> BlobStore::Find(uint64_t number) {
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = readers_.find(number);
    if (it != readers_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
      return it->second.reader;
    }
  }
  const std::string path = BlobFileName(ctx_->dbname, number);
  auto size = ctx_->fs->GetFileSize(path);
  if (!size) return Err(size.error().WithContext("a blob index names blob file " + std::to_string(number)));
  // One value per read: pread, as for table blocks (table_cache.cc).
  FileOptions fo = ctx_->file_options;
  fo.pread_single_reads = true;
  auto file = ctx_->fs->NewRandomAccessFile(path, fo);
  if (!file) return Err(file.error());
  auto reader = BlobFileReader::Open(std::move(*file), *size);
  if (!reader) return Err(reader.error());
  std::shared_ptr<BlobFileReader> shared = std::move(*reader);
  std::lock_guard<std::mutex> g(mu_);
  auto it = readers_.find(number);
  if (it != readers_.end()) return it->second.reader;  // another thread won the race
  lru_.push_front(number);
  readers_.emplace(number, Entry{shared, lru_.begin()});
  while (readers_.size() > capacity_) {  // readers still in use stay open until they are done
    readers_.erase(lru_.back());
    lru_.pop_back();
  }
  return shared;
}

Status BlobStore::Read(const Slice& user_key, const Slice& encoded_index, std::string* value) {
  BlobIndex index;
  MXFS_RETURN_IF_ERROR(index.DecodeFrom(encoded_index));
  return Read(user_key, index, value);
}

Status BlobStore::Read(const Slice& user_key, const BlobIndex& index, std::string* value) {
  auto reader = Find(index.file_number);
  if (!reader) return reader.error();
  return (*reader)->Get(user_key, index.offset, index.value_size, value);
}

void BlobStore::Evict(uint64_t number) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = readers_.find(number);
  if (it == readers_.end()) return;
  lru_.erase(it->second.lru_pos);
  readers_.erase(it);
}

size_t BlobStore::OpenFiles() {
  std::lock_guard<std::mutex> g(mu_);
  return readers_.size();
}

}  // namespace mxfs
