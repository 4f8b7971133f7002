#include "kvcore/table_cache.h"

#include "kvcore/filename.h"

namespace mxfs {

Result<std::shared_ptr<Table>> TableCache::FindTable(uint64_t number, uint64_t file_size) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(number);
    if (it != map_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
      return it->second.table;
    }
  }
  const std::string path = TableFileName(ctx_->dbname, number);
  // A Get reads one block at a time: pread is cheaper than a one-entry ring
  // submission for it (BENCHMARKS.md, "readrandom after the load").
  FileOptions fo = ctx_->file_options;
  fo.pread_single_reads = true;
  auto file = ctx_->fs->NewRandomAccessFile(path, fo);
  if (!file) return Err(file.error());
  auto table = Table::Open(ctx_->table_options, std::move(*file), file_size, number);
  if (!table) {
    Status s = table.error();
    if (s.message().find(path) == std::string_view::npos) s = s.WithContext(path);
    return Err(std::move(s));
  }
  std::shared_ptr<Table> t(std::move(*table));
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(number);
  if (it != map_.end()) return it->second.table;  // another thread opened it meanwhile
  lru_.push_front(number);
  map_.emplace(number, Entry{t, lru_.begin()});
  while (map_.size() > capacity_ && !lru_.empty()) {
    map_.erase(lru_.back());  // users keep their shared_ptr
    lru_.pop_back();
  }
  return t;
}

std::unique_ptr<Iterator> TableCache::NewIterator(const ReadOptions& options, uint64_t number,
                                                  uint64_t file_size) {
  auto t = FindTable(number, file_size);
  if (!t) return NewEmptyIterator(t.error());
  std::unique_ptr<Iterator> it = (*t)->NewIterator(options.fill_cache);
  it->RegisterCleanup([table = *t] {});
  return it;
}

Status TableCache::Get(const ReadOptions& options, uint64_t number, uint64_t file_size, const Slice& ikey,
                       const std::function<void(const Slice&, const Slice&)>& found) {
  auto t = FindTable(number, file_size);
  if (!t) return t.error();
  return (*t)->Get(ikey, found, options.fill_cache);
}

void TableCache::Evict(uint64_t number) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = map_.find(number);
  if (it == map_.end()) return;
  lru_.erase(it->second.lru_pos);
  map_.erase(it);
}

size_t TableCache::Size() {
  std::lock_guard<std::mutex> l(mu_);
  return map_.size();
}

}  // namespace mxfs
