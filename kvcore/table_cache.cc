#include "kvcore/table_cache.h"

#include "kvcore/filename.h"

namespace mxfs {

Result<std::shared_ptr<Table>> TableCache::FindTable(uint64_t number, uint64_t file_size) {
  return tables_.FindOrOpen(number, [&] { return Open(number, file_size); });
}

Result<std::shared_ptr<Table>> TableCache::Open(uint64_t number, uint64_t file_size) {
  const std::string path = TableFileName(ctx_->dbname, number);
  // A Get reads one block at a time: pread is cheaper than a one-entry ring
  // submission for it (BENCHMARKS.md, "readrandom after the load").
  FileOptions fo = ctx_->file_options;
  fo.pread_single_reads = true;
  // Or no system call at all for a cached page (tables never change).
  fo.mmap_reads = ctx_->options.mmap_reads;
  auto file = ctx_->fs->NewRandomAccessFile(path, fo);
  if (!file) return Err(file.error());
  auto table = Table::Open(ctx_->table_options, std::move(*file), file_size, number);
  if (!table) {
    Status s = table.error();
    if (s.message().find(path) == std::string_view::npos) s = s.WithContext(path);
    return Err(std::move(s));
  }
  return std::shared_ptr<Table>(std::move(*table));
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
                       FunctionRef<void(const Slice&, const Slice&)> found) {
  auto t = FindTable(number, file_size);
  if (!t) return t.error();
  return (*t)->Get(ikey, found, options.fill_cache);
}

}  // namespace mxfs
