// MergingIterator: the engine's one k-way merge, the sorted union of n child
// iterators. kvcore merges memtables, L0 and levels with NewMergingIterator
// (children are any Iterator); the matrix container (nvm/) merges its rows
// with MergingIterator<RowTableIterator>: that child type is final, so the
// calls on the children in the hot loop (Valid, key, Next) are direct, and
// a Next costs no virtual call beyond the comparator's.
//
// Order: the comparator's. Equal keys from several children all appear, the
// child with the lower index first (kvcore's internal keys are unique but
// for a column both in L1 and still in the container after a crash; the
// container lists its rows newest first). Backward iteration yields the
// exact reverse, also across changes of direction.
// Seek: every child seeks to the target, or, if a seek function is given,
// that function positions all children at once (the container's cross-row
// hints, ContainerVersion::Locate).
// status(): the first non-OK status among the children, in index order.
//
// Thread-safety: as Iterator (one thread at a time).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/comparator.h"
#include "base/iterator.h"

namespace mxfs {

template <typename Child>
class MergingIterator final : public Iterator {
 public:
  using Children = std::vector<std::unique_ptr<Child>>;
  // Positions every child at its first entry >= target.
  using SeekFn = std::function<void(const Slice& target, Children& children)>;

  MergingIterator(const Comparator* cmp, Children children, SeekFn seek = nullptr)
      : cmp_(cmp), children_(std::move(children)), seek_(std::move(seek)) {}

  bool Valid() const override { return current_ != nullptr; }
  void SeekToFirst() override {
    for (auto& c : children_) c->SeekToFirst();
    FindSmallest();
    forward_ = true;
  }
  void SeekToLast() override {
    for (auto& c : children_) c->SeekToLast();
    FindLargest();
    forward_ = false;
  }
  void Seek(const Slice& target) override {
    if (seek_) {
      seek_(target, children_);
    } else {
      for (auto& c : children_) c->Seek(target);
    }
    FindSmallest();
    forward_ = true;
  }
  void Next() override {
    if (!forward_) Turn(true);
    current_->Next();
    FindSmallest();
  }
  void Prev() override {
    if (forward_) Turn(false);
    current_->Prev();
    FindLargest();
  }
  Slice key() const override { return current_->key(); }
  Slice value() const override { return current_->value(); }
  bool ValuePinned() const override { return current_->ValuePinned(); }
  Status status() const override {
    for (const auto& c : children_) {
      Status s = c->status();
      if (!s.ok()) return s;
    }
    return Status::OK();
  }

 private:
  size_t IndexOf(const Child* child) const {
    for (size_t i = 0; i < children_.size(); i++)
      if (children_[i].get() == child) return i;
    return children_.size();
  }
  // Puts every other child where a pass in the new direction would have it
  // at key(). A child with a lower index than current_ that holds key()
  // itself comes before current_ in forward order: forward it moves past
  // key(), backward it stays. Every other child moves just past key() in
  // the new direction.
  void Turn(bool forward) {
    const std::string k = key().ToString();
    const size_t cur = IndexOf(current_);
    for (size_t i = 0; i < children_.size(); i++) {
      if (i == cur) continue;
      Child* c = children_[i].get();
      c->Seek(k);
      const bool before_at_k = i < cur && c->Valid() && cmp_->Compare(k, c->key()) == 0;
      if (forward) {
        if (before_at_k) c->Next();
      } else if (!before_at_k) {
        if (c->Valid()) c->Prev();
        else c->SeekToLast();
      }
    }
    forward_ = forward;
  }
  // Ties: the lowest index.
  void FindSmallest() {
    Child* smallest = nullptr;
    for (auto& c : children_) {
      if (c->Valid() && (smallest == nullptr || cmp_->Compare(c->key(), smallest->key()) < 0)) smallest = c.get();
    }
    current_ = smallest;
  }
  // Ties: the highest index.
  void FindLargest() {
    Child* largest = nullptr;
    for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
      auto& c = *it;
      if (c->Valid() && (largest == nullptr || cmp_->Compare(c->key(), largest->key()) > 0)) largest = c.get();
    }
    current_ = largest;
  }

  const Comparator* const cmp_;
  Children children_;
  SeekFn seek_;
  Child* current_ = nullptr;
  bool forward_ = true;
};

extern template class MergingIterator<Iterator>;

// The merge of children (the one child itself if there is only one).
std::unique_ptr<Iterator> NewMergingIterator(const Comparator* cmp, std::vector<std::unique_ptr<Iterator>> children);

}  // namespace mxfs
