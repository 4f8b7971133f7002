#include "base/iterator.h"

namespace mxfs {

Iterator::~Iterator() {
  for (auto& fn : cleanups_) fn();
}

void Iterator::RegisterCleanup(std::function<void()> fn) { cleanups_.push_back(std::move(fn)); }

namespace {
class EmptyIterator final : public Iterator {
 public:
  explicit EmptyIterator(Status s) : status_(std::move(s)) {}
  bool Valid() const override { return false; }
  void SeekToFirst() override {}
  void SeekToLast() override {}
  void Seek(const Slice&) override {}
  void Next() override {}
  void Prev() override {}
  Slice key() const override { return Slice(); }
  Slice value() const override { return Slice(); }
  Status status() const override { return status_; }

 private:
  Status status_;
};
}  // namespace

std::unique_ptr<Iterator> NewEmptyIterator(Status s) { return std::make_unique<EmptyIterator>(std::move(s)); }

}  // namespace mxfs
