#include "kvcore/merger.h"

#include "kvcore/table_cache.h"

namespace mxfs {

namespace {

class LevelIterator final : public Iterator {
 public:
  LevelIterator(TableCache* cache, const ReadOptions& options, const Comparator* icmp,
                std::vector<std::shared_ptr<FileMetaData>> files)
      : cache_(cache), options_(options), icmp_(icmp), files_(std::move(files)) {}

  bool Valid() const override { return table_ != nullptr && table_->Valid(); }
  void SeekToFirst() override {
    OpenFile(0);
    if (table_) table_->SeekToFirst();
    SkipEmptyForward();
  }
  void SeekToLast() override {
    OpenFile(files_.empty() ? 0 : files_.size() - 1);
    if (table_) table_->SeekToLast();
    SkipEmptyBackward();
  }
  void Seek(const Slice& target) override {
    // The first file whose largest key >= target.
    size_t lo = 0, hi = files_.size();
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (icmp_->Compare(files_[mid]->largest.Encode(), target) < 0) lo = mid + 1;
      else hi = mid;
    }
    OpenFile(lo);
    if (table_) table_->Seek(target);
    SkipEmptyForward();
  }
  void Next() override {
    table_->Next();
    SkipEmptyForward();
  }
  void Prev() override {
    table_->Prev();
    SkipEmptyBackward();
  }
  Slice key() const override { return table_->key(); }
  Slice value() const override { return table_->value(); }
  Status status() const override {
    if (!status_.ok()) return status_;
    return table_ ? table_->status() : Status::OK();
  }

 private:
  void OpenFile(size_t index) {
    if (index >= files_.size()) {
      SaveStatus();
      table_.reset();
      index_ = files_.size();
      return;
    }
    if (table_ && index_ == index) return;
    SaveStatus();
    index_ = index;
    table_ = cache_->NewIterator(options_, files_[index]->number, files_[index]->file_size);
  }
  void SaveStatus() {
    if (table_ && status_.ok()) status_ = table_->status();
  }
  void SkipEmptyForward() {
    while (table_ && !table_->Valid()) {
      if (!table_->status().ok() || index_ + 1 >= files_.size()) {
        SaveStatus();
        if (table_->status().ok()) table_.reset();
        return;
      }
      OpenFile(index_ + 1);
      table_->SeekToFirst();
    }
  }
  void SkipEmptyBackward() {
    while (table_ && !table_->Valid()) {
      if (!table_->status().ok() || index_ == 0) {
        SaveStatus();
        if (table_->status().ok()) table_.reset();
        return;
      }
      OpenFile(index_ - 1);
      table_->SeekToLast();
    }
  }

  TableCache* cache_;
  ReadOptions options_;
  const Comparator* icmp_;
  std::vector<std::shared_ptr<FileMetaData>> files_;
  size_t index_ = 0;
  std::unique_ptr<Iterator> table_;
  Status status_;
};

}  // namespace

std::unique_ptr<Iterator> NewLevelIterator(TableCache* cache, const ReadOptions& options, const Comparator* icmp,
                                           std::vector<std::shared_ptr<FileMetaData>> files) {
  return std::make_unique<LevelIterator>(cache, options, icmp, std::move(files));
}

}  // namespace mxfs
