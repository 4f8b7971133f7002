#include "kvcore/ssd_level0.h"

#include "kvcore/db_context.h"
#include "kvcore/filename.h"
#include "kvcore/table_cache.h"
#include "kvcore/version_set.h"

namespace mxfs {

Status BuildTable(const DbContext* ctx, Iterator* iter, uint64_t number, FileMetaData* meta) {
  meta->number = number;
  meta->file_size = 0;
  // A memtable holds values inline: the table points into no blob file.
  meta->blob_refs.clear();
  meta->blob_refs_known = true;
  iter->SeekToFirst();
  if (!iter->Valid()) return iter->status();
  const std::string path = TableFileName(ctx->dbname, number);
  auto file = ctx->fs->NewWritableFile(path, ctx->file_options);
  if (!file) return file.error();
  TableBuilder builder(ctx->table_options, file->get());
  meta->smallest.DecodeFrom(iter->key());
  meta->smallest_seq = kMaxSequenceNumber;
  meta->largest_seq = 0;
  for (; iter->Valid(); iter->Next()) {
    const Slice key = iter->key();
    meta->largest.DecodeFrom(key);
    const SequenceNumber seq = ExtractTrailer(key) >> 8;
    meta->smallest_seq = std::min(meta->smallest_seq, seq);
    meta->largest_seq = std::max(meta->largest_seq, seq);
    builder.Add(key, iter->value());
  }
  Status s = iter->status();
  if (s.ok()) s = builder.Finish();
  else builder.Abandon();
  if (s.ok()) s = (*file)->Sync();
  Status cs = (*file)->Close();
  if (s.ok()) s = std::move(cs);
  if (s.ok()) {
    meta->file_size = builder.FileSize();
    // Read it back once: a table we cannot open must not enter the tree.
    auto t = ctx->table_cache->FindTable(number, meta->file_size);
    if (!t) s = t.error();
  }
  if (!s.ok()) {
    meta->file_size = 0;
    ctx->fs->RemoveFile(path).IgnoreError();  // best effort: an orphan is removed by the next obsolete-file sweep
  }
  return s;
}

namespace {

class SsdLevel0 final : public Level0 {
 public:
  explicit SsdLevel0(const DbContext* ctx) : ctx_(ctx) {}

  Status WriteMemTable(Iterator* iter, uint64_t file_number, VersionEdit* edit, FlushResult* result) override {
    FileMetaData meta;
    MXFS_RETURN_IF_ERROR(BuildTable(ctx_, iter, file_number, &meta));
    if (meta.file_size > 0) edit->AddFile(0, meta);
    result->bytes_written = meta.file_size;
    return Status::OK();
  }

  Status Get(const Version& v, const ReadOptions& options, const LookupKey& key, std::string* value, bool* found,
             bool* deleted) override {
    const Comparator* ucmp = ctx_->icmp.user_comparator();
    const FileList& files = v.files(0);
    // Newest first: higher file numbers were flushed later.
    for (auto it = files.rbegin(); it != files.rend(); ++it) {
      const FileMetaData& f = **it;
      if (ucmp->Compare(key.user_key(), f.smallest.user_key()) < 0 ||
          ucmp->Compare(key.user_key(), f.largest.user_key()) > 0) {
        continue;
      }
      MXFS_RETURN_IF_ERROR(Version::GetFromFile(ctx_, options, f, key, value, found, deleted));
      if (*found) return Status::OK();
    }
    return Status::OK();
  }

  void AddIterators(const Version& v, const ReadOptions& options,
                    std::vector<std::unique_ptr<Iterator>>* iters) override {
    const Slice prefix(options.prefix);
    for (const auto& f : v.files(0)) {
      if (!RangeMayHoldPrefix(f->smallest.user_key(), f->largest.user_key(), prefix)) continue;
      iters->push_back(ctx_->table_cache->NewIterator(options, f->number, f->file_size));
    }
  }

  int NumRuns(const Version& v) const override { return v.NumFiles(0); }

  double CompactionScore(const Version& v) const override {
    return static_cast<double>(v.NumFiles(0)) / ctx_->options.level0_file_num_compaction_trigger;
  }

  std::unique_ptr<Compaction> PickCompaction(VersionSet* vset, const std::shared_ptr<Version>& v) override {
    return vset->PickLeveledCompaction(0, v);
  }

  std::string Describe() const override { return "no NVM pool configured: L0 is SSTables on the SSD\n"; }

 private:
  const DbContext* ctx_;
};

}  // namespace

std::unique_ptr<Level0> NewSsdLevel0(const DbContext* ctx) { return std::make_unique<SsdLevel0>(ctx); }

}  // namespace mxfs
