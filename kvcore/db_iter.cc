#include "kvcore/db_iter.h"

#include <string>

#include "kvcore/blob_store.h"

namespace mxfs {

namespace {

class DBIter final : public Iterator {
 public:
  DBIter(const Comparator* cmp, BlobStore* blobs, std::unique_ptr<Iterator> iter, SequenceNumber s,
         std::string upper_bound)
      : user_cmp_(cmp), blobs_(blobs), iter_(std::move(iter)), sequence_(s), upper_bound_(std::move(upper_bound)) {}

  bool Valid() const override { return valid_; }
  Slice key() const override { return direction_ == kForward ? ExtractUserKey(iter_->key()) : Slice(saved_key_); }
  // A blob index is resolved here, on first use, so that scans that only
  // look at keys (deleting a file's blocks) read no blob file. A failed read
  // gives an empty value, makes the iterator invalid and leaves the error in
  // status().
  Slice value() const override {
    const Slice raw = direction_ == kReverse ? Slice(saved_value_) : iter_->value();
    if (!blob_) return raw;
    if (!blob_resolved_) {
      blob_resolved_ = true;
      Status s = blobs_ != nullptr ? blobs_->Read(key(), raw, &blob_value_)
                                   : Status::Corruption("blob index in an iterator without a blob store");
      if (!s.ok()) {
        blob_value_.clear();
        blob_status_ = std::move(s);
        valid_ = false;  // the loop around this call ends; status() says why
      }
    }
    return blob_value_;
  }
  Status status() const override {
    if (!status_.ok()) return status_;
    if (!blob_status_.ok()) return blob_status_;
    return iter_->status();
  }

  void Next() override {
    if (direction_ == kReverse) {
      direction_ = kForward;
      // iter_ is just before the entries of saved_key_: step into them, then skip them.
      if (!iter_->Valid()) iter_->SeekToFirst();
      else iter_->Next();
      if (!iter_->Valid()) {
        valid_ = false;
        saved_key_.clear();
        return;
      }
    } else {
      saved_key_.assign(ExtractUserKey(iter_->key()).data(), ExtractUserKey(iter_->key()).size());
      iter_->Next();
      if (!iter_->Valid()) {
        valid_ = false;
        saved_key_.clear();
        return;
      }
    }
    FindNextUserEntry(true);
  }

  void Prev() override {
    if (direction_ == kForward) {
      // Move iter_ before every entry of the current user key.
      saved_key_.assign(ExtractUserKey(iter_->key()).data(), ExtractUserKey(iter_->key()).size());
      while (true) {
        iter_->Prev();
        if (!iter_->Valid()) {
          valid_ = false;
          saved_key_.clear();
          saved_value_.clear();
          return;
        }
        if (user_cmp_->Compare(ExtractUserKey(iter_->key()), saved_key_) < 0) break;
      }
      direction_ = kReverse;
    }
    FindPrevUserEntry();
  }

  void Seek(const Slice& target) override {
    direction_ = kForward;
    saved_value_.clear();
    saved_key_.clear();
    AppendInternalKey(&saved_key_, target, sequence_, kValueTypeForSeek);
    iter_->Seek(saved_key_);
    if (iter_->Valid()) FindNextUserEntry(false);
    else valid_ = false;
  }
  void SeekToFirst() override {
    direction_ = kForward;
    saved_value_.clear();
    iter_->SeekToFirst();
    if (iter_->Valid()) FindNextUserEntry(false);
    else valid_ = false;
  }
  void SeekToLast() override {
    direction_ = kReverse;
    saved_value_.clear();
    if (!upper_bound_.empty()) {
      // The last entry below the bound.
      std::string bound;
      AppendInternalKey(&bound, upper_bound_, kMaxSequenceNumber, kValueTypeForSeek);
      iter_->Seek(bound);
      if (iter_->Valid()) iter_->Prev();
      else iter_->SeekToLast();
    } else {
      iter_->SeekToLast();
    }
    FindPrevUserEntry();
  }

 private:
  bool ParseKey(ParsedInternalKey* ikey) {
    if (!ParseInternalKey(iter_->key(), ikey)) {
      status_ = Status::Corruption("malformed internal key in iterator: " + iter_->key().ToEscaped());
      return false;
    }
    return true;
  }

  // Forward: from iter_'s position, the first user key with a visible put;
  // with skipping, entries of user keys <= saved_key_ are hidden.
  void FindNextUserEntry(bool skipping) {
    blob_ = false;
    do {
      ParsedInternalKey ikey;
      const bool parsed = ParseKey(&ikey);
      if (parsed && !upper_bound_.empty() && user_cmp_->Compare(ikey.user_key, upper_bound_) >= 0) {
        break;  // past the bound: nothing more, whatever follows
      }
      if (parsed && ikey.sequence <= sequence_) {
        switch (ikey.type) {
          case kTypeDeletion:
            saved_key_.assign(ikey.user_key.data(), ikey.user_key.size());
            skipping = true;
            break;
          case kTypeValue:
          case kTypeBlobIndex:
            if (skipping && user_cmp_->Compare(ikey.user_key, saved_key_) <= 0) break;  // hidden
            valid_ = true;
            saved_key_.clear();
            blob_ = ikey.type == kTypeBlobIndex;
            blob_resolved_ = false;
            return;
        }
      }
      iter_->Next();
    } while (iter_->Valid());
    saved_key_.clear();
    valid_ = false;
  }

  // Backward: scans entries of decreasing user key, keeping the newest
  // visible one of the current user key, until the key changes after a put.
  void FindPrevUserEntry() {
    blob_ = false;
    ValueType value_type = kTypeDeletion;
    if (iter_->Valid()) {
      do {
        ParsedInternalKey ikey;
        if (ParseKey(&ikey) && ikey.sequence <= sequence_) {
          if (value_type != kTypeDeletion && user_cmp_->Compare(ikey.user_key, saved_key_) < 0) break;
          value_type = ikey.type;
          if (value_type == kTypeDeletion) {
            saved_key_.clear();
            saved_value_.clear();
          } else {
            saved_key_.assign(ikey.user_key.data(), ikey.user_key.size());
            Slice v = iter_->value();
            saved_value_.assign(v.data(), v.size());
          }
        }
        iter_->Prev();
      } while (iter_->Valid());
    }
    if (value_type == kTypeDeletion) {
      valid_ = false;
      saved_key_.clear();
      saved_value_.clear();
      direction_ = kForward;
    } else {
      valid_ = true;
      blob_ = value_type == kTypeBlobIndex;
      blob_resolved_ = false;
    }
  }

  enum Direction { kForward, kReverse };
  const Comparator* user_cmp_;
  BlobStore* const blobs_;
  std::unique_ptr<Iterator> iter_;
  const SequenceNumber sequence_;
  // Forward scans end at the first entry at or past it (empty: none), so
  // the deletions that follow a prefix's keys are never stepped over.
  const std::string upper_bound_;
  Status status_;
  std::string saved_key_;
  std::string saved_value_;
  Direction direction_ = kForward;
  mutable bool valid_ = false;  // also cleared by a failed blob read in value()
  // The current entry's value is a blob index (in iter_->value() or, in
  // reverse, saved_value_), read into blob_value_ by the first value().
  bool blob_ = false;
  mutable bool blob_resolved_ = false;
  mutable std::string blob_value_;
  mutable Status blob_status_;
};

class PrefixIter final : public Iterator {
 public:
  PrefixIter(std::unique_ptr<Iterator> iter, std::string prefix) : iter_(std::move(iter)), prefix_(std::move(prefix)) {
    // The first key above every key with the prefix: the prefix with its
    // last byte below 0xff incremented and what follows it dropped (none if
    // every byte is 0xff).
    limit_ = PrefixLimit(prefix_);
  }
  bool Valid() const override { return iter_->Valid() && iter_->key().starts_with(prefix_); }
  void SeekToFirst() override { iter_->Seek(prefix_); }
  void SeekToLast() override {
    if (limit_.empty()) {
      iter_->SeekToLast();
      return;
    }
    iter_->Seek(limit_);
    if (iter_->Valid()) {
      iter_->Prev();
    } else if (iter_->status().ok()) {
      iter_->SeekToLast();
    }
  }
  void Seek(const Slice& target) override { iter_->Seek(target.compare(prefix_) < 0 ? Slice(prefix_) : target); }
  void Next() override { iter_->Next(); }
  void Prev() override { iter_->Prev(); }
  Slice key() const override { return iter_->key(); }
  Slice value() const override { return iter_->value(); }
  Status status() const override { return iter_->status(); }

 private:
  std::unique_ptr<Iterator> iter_;
  const std::string prefix_;
  std::string limit_;  // empty: no key is above the prefix's keys
};

}  // namespace

std::unique_ptr<Iterator> NewPrefixIterator(std::unique_ptr<Iterator> db_iter, std::string prefix) {
  return std::make_unique<PrefixIter>(std::move(db_iter), std::move(prefix));
}

std::string PrefixLimit(const std::string& prefix) {
  std::string limit = prefix;
  while (!limit.empty() && static_cast<uint8_t>(limit.back()) == 0xff) limit.pop_back();
  if (!limit.empty()) limit.back() = static_cast<char>(static_cast<uint8_t>(limit.back()) + 1);
  return limit;
}

std::unique_ptr<Iterator> NewDBIterator(const Comparator* user_cmp, BlobStore* blobs,
                                        std::unique_ptr<Iterator> internal, SequenceNumber sequence,
                                        std::string upper_bound) {
  return std::make_unique<DBIter>(user_cmp, blobs, std::move(internal), sequence, std::move(upper_bound));
}

}  // namespace mxfs
