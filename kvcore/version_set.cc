#include "kvcore/version_set.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <type_traits>

#include "base/lock_check.h"
#include "base/logging.h"
#include "kvcore/blob_store.h"
#include "kvcore/filename.h"
#include "kvcore/level0.h"
#include "kvcore/log_reader.h"
#include "kvcore/merger.h"
#include "kvcore/table_cache.h"

namespace mxfs {

namespace {
constexpr uint64_t kMaxManifestSize = 16ull << 20;  // then roll to a new MANIFEST with a snapshot

uint64_t TotalFileSize(const FileList& files) {
  uint64_t sum = 0;
  for (const auto& f : files) sum += f->file_size;
  return sum;
}
}  // namespace

// ---- Version ---------------------------------------------------------------

uint64_t Version::NumBytes(int level) const { return TotalFileSize(files_[level]); }

namespace {

// How GetFromFile hands an inline value to each kind of Value.
void AssignValue(std::string* value, const Slice& v) { value->assign(v.data(), v.size()); }
void AssignValue(PinnableSlice* value, const Slice& v) { value->Assign(v); }

}  // namespace

template <typename Value>
Status Version::GetFromFile(const DbContext* ctx, const ReadOptions& options, const FileMetaData& f,
                            const LookupKey& key, Value* value, bool* found, bool* deleted) {
  const Comparator* ucmp = ctx->icmp.user_comparator();
  Status corrupt;
  bool blob = false;
  BlobIndex blob_index;
  Status s = ctx->table_cache->Get(options, f.number, f.file_size, key.internal_key(),
                                   [&](const Slice& k, const Slice& v) {
                                     ParsedInternalKey parsed;
                                     if (!ParseInternalKey(k, &parsed)) {
                                       corrupt = Status::Corruption(TableFileName(ctx->dbname, f.number) +
                                                                    ": malformed internal key " + k.ToEscaped());
                                       return;
                                     }
                                     if (ucmp->Compare(parsed.user_key, key.user_key()) != 0) return;
                                     *found = true;
                                     *deleted = parsed.type == kTypeDeletion;
                                     blob = parsed.type == kTypeBlobIndex;
                                     if (blob) {
                                       // Decoded from the block in place: no
                                       // copy through *value, whose buffer
                                       // the blob read then fills.
                                       corrupt = blob_index.DecodeFrom(v);
                                     } else if (!*deleted) {
                                       AssignValue(value, v);
                                     }
                                   });
  if (!corrupt.ok()) {
    return blob ? corrupt.WithContext("reading the value of a key in " + TableFileName(ctx->dbname, f.number))
                : corrupt;
  }
  if (s.IsNotFound()) return Status::OK();
  if (s.ok() && blob) {
    s = ctx->blob_store->Read(key.user_key(), blob_index, value);
    if (!s.ok()) s = s.WithContext("reading the value of a key in " + TableFileName(ctx->dbname, f.number));
  }
  return s;
}

template Status Version::GetFromFile(const DbContext*, const ReadOptions&, const FileMetaData&, const LookupKey&,
                                     std::string*, bool*, bool*);
template Status Version::GetFromFile(const DbContext*, const ReadOptions&, const FileMetaData&, const LookupKey&,
                                     PinnableSlice*, bool*, bool*);

template <typename Value>
Status Version::GetFromLevel(int level, const ReadOptions& options, const LookupKey& key, Value* value, bool* found,
                             bool* deleted) const {
  const FileList& files = files_[level];
  const Slice ikey = key.internal_key();
  size_t lo = 0, hi = files.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ctx_->icmp.Compare(files[mid]->largest.Encode(), ikey) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo >= files.size()) return Status::OK();
  const FileMetaData& f = *files[lo];
  if (ctx_->icmp.user_comparator()->Compare(key.user_key(), f.smallest.user_key()) < 0) return Status::OK();
  return GetFromFile(ctx_, options, f, key, value, found, deleted);
}

template Status Version::GetFromLevel(int, const ReadOptions&, const LookupKey&, std::string*, bool*, bool*) const;
template Status Version::GetFromLevel(int, const ReadOptions&, const LookupKey&, PinnableSlice*, bool*, bool*) const;

template <typename Value>
Status Version::GetImpl(const ReadOptions& options, const LookupKey& key, Value* value) const {
  bool found = false, deleted = false;
  if constexpr (std::is_same_v<Value, PinnableSlice>) {
    // L0 (the container, or SSD L0 tables) holds its values inline: copied
    // into the slice's own buffer.
    std::string* buf = value->Buffer();
    MXFS_RETURN_IF_ERROR(level0_->Get(*this, options, key, buf, &found, &deleted));
    if (found && !deleted) value->SetFromBuffer(0, buf->size());
  } else {
    MXFS_RETURN_IF_ERROR(level0_->Get(*this, options, key, value, &found, &deleted));
  }
  for (int level = 1; !found && level < num_levels(); level++) {
    if (files_[level].empty()) continue;
    MXFS_RETURN_IF_ERROR(GetFromLevel(level, options, key, value, &found, &deleted));
  }
  if (found && !deleted) return Status::OK();
  if constexpr (std::is_same_v<Value, PinnableSlice>) value->Reset();
  return Status::NotFound(found ? "deleted" : "no such key");
}

Status Version::Get(const ReadOptions& options, const LookupKey& key, std::string* value) const {
  return GetImpl(options, key, value);
}

Status Version::Get(const ReadOptions& options, const LookupKey& key, PinnableSlice* value) const {
  return GetImpl(options, key, value);
}

void Version::AddIterators(const ReadOptions& options, std::vector<std::unique_ptr<Iterator>>* iters) const {
  level0_->AddIterators(*this, options, iters);
  const Slice prefix(options.prefix);
  for (int level = 1; level < num_levels(); level++) {
    const FileList& files = files_[level];
    if (files.empty()) continue;
    if (prefix.empty()) {
      iters->push_back(NewLevelIterator(ctx_->table_cache, options, &ctx_->icmp, files));
      continue;
    }
    // A prefix scan: only the tables whose range may hold the prefix (the
    // level is sorted and its tables disjoint, so they are adjacent).
    auto first = std::partition_point(files.begin(), files.end(), [&](const std::shared_ptr<FileMetaData>& f) {
      return f->largest.user_key().compare(prefix) < 0;
    });
    FileList some;
    for (auto f = first; f != files.end(); ++f) {
      if (!RangeMayHoldPrefix((*f)->smallest.user_key(), (*f)->largest.user_key(), prefix)) break;
      some.push_back(*f);
    }
    if (!some.empty()) iters->push_back(NewLevelIterator(ctx_->table_cache, options, &ctx_->icmp, std::move(some)));
  }
}

void Version::GetOverlappingInputs(int level, const InternalKey* begin, const InternalKey* end,
                                   FileList* inputs) const {
  inputs->clear();
  std::string user_begin, user_end;
  if (begin) user_begin = begin->user_key().ToString();
  if (end) user_end = end->user_key().ToString();
  const Comparator* ucmp = ctx_->icmp.user_comparator();
  for (size_t i = 0; i < files_[level].size();) {
    const auto& f = files_[level][i++];
    const Slice file_start = f->smallest.user_key();
    const Slice file_limit = f->largest.user_key();
    if (begin != nullptr && ucmp->Compare(file_limit, user_begin) < 0) continue;
    if (end != nullptr && ucmp->Compare(file_start, user_end) > 0) continue;
    inputs->push_back(f);
    if (level == 0) {
      // L0 files overlap each other: widen the range and start over.
      if (begin != nullptr && ucmp->Compare(file_start, user_begin) < 0) {
        user_begin = file_start.ToString();
        inputs->clear();
        i = 0;
      } else if (end != nullptr && ucmp->Compare(file_limit, user_end) > 0) {
        user_end = file_limit.ToString();
        inputs->clear();
        i = 0;
      }
    }
  }
}

bool Version::OverlapInLevel(int level, const Slice* smallest_user, const Slice* largest_user) const {
  const Comparator* ucmp = ctx_->icmp.user_comparator();
  for (const auto& f : files_[level]) {
    if (smallest_user && ucmp->Compare(f->largest.user_key(), *smallest_user) < 0) continue;
    if (largest_user && ucmp->Compare(f->smallest.user_key(), *largest_user) > 0) continue;
    return true;
  }
  return false;
}

// ---- Compaction ------------------------------------------------------------

Compaction::Compaction(const DbContext* ctx, int level, std::shared_ptr<Version> input_version)
    : ctx_(ctx),
      level_(level),
      output_level_(level + 1),
      max_output_file_size_(ctx->options.target_file_size_base),
      input_version_(std::move(input_version)),
      level_ptrs_(ctx->options.num_levels, 0) {}

bool Compaction::IsTrivialMove() const {
  return !is_gc() && inputs_[0].size() == 1 && inputs_[1].empty() &&
         TotalFileSize(grandparents_) <= 10 * ctx_->options.target_file_size_base;
}

void Compaction::AddInputDeletions(VersionEdit* edit) const {
  for (int which = 0; which < 2; which++) {
    for (const auto& f : inputs_[which]) edit->RemoveFile(level_ + which, f->number);
  }
}

bool Compaction::IsBaseLevelForKey(const Slice& user_key) {
  const Comparator* ucmp = ctx_->icmp.user_comparator();
  for (int lvl = output_level_ + 1; lvl < input_version_->num_levels(); lvl++) {
    const FileList& files = input_version_->files(lvl);
    while (level_ptrs_[lvl] < files.size()) {
      const auto& f = files[level_ptrs_[lvl]];
      if (ucmp->Compare(user_key, f->largest.user_key()) <= 0) {
        if (ucmp->Compare(user_key, f->smallest.user_key()) >= 0) return false;
        break;
      }
      level_ptrs_[lvl]++;  // keys only grow, so this file is behind us for good
    }
  }
  return true;
}

bool Compaction::ShouldStopBefore(const Slice& internal_key) {
  while (grandparent_index_ < grandparents_.size() &&
         ctx_->icmp.Compare(internal_key, grandparents_[grandparent_index_]->largest.Encode()) > 0) {
    if (seen_key_) overlapped_bytes_ += grandparents_[grandparent_index_]->file_size;
    grandparent_index_++;
  }
  seen_key_ = true;
  if (overlapped_bytes_ > 10 * ctx_->options.target_file_size_base) {
    overlapped_bytes_ = 0;
    return true;
  }
  return false;
}

uint64_t Compaction::InputBytes() const { return TotalFileSize(inputs_[0]) + TotalFileSize(inputs_[1]); }

// ---- VersionSet::Builder ---------------------------------------------------

class VersionSet::Builder {
 public:
  Builder(const DbContext* ctx, const Version* base) : ctx_(ctx), levels_(base->num_levels()) {
    for (int l = 0; l < base->num_levels(); l++) {
      for (const auto& f : base->files(l)) levels_[l][f->number] = f;
    }
    blobs_ = base->blob_files();
  }
  // Corruption if the edit names a level beyond num_levels.
  Status Apply(const VersionEdit& edit) {
    for (const auto& [level, number] : edit.deleted_files()) {
      if (level >= static_cast<int>(levels_.size())) return BadLevel(level);
      levels_[level].erase(number);
    }
    for (const auto& [level, f] : edit.new_files()) {
      if (level >= static_cast<int>(levels_.size())) return BadLevel(level);
      levels_[level][f.number] = std::make_shared<FileMetaData>(f);
    }
    for (const BlobFileMeta& b : edit.new_blob_files()) {
      if (blobs_.contains(b.number)) {
        return Status::Corruption("version edit adds blob file " + std::to_string(b.number) + " twice");
      }
      auto st = std::make_shared<BlobFileState>();
      st->meta = b;
      blobs_[b.number] = std::move(st);
    }
    for (const auto& [number, g] : edit.blob_garbage()) {
      auto it = blobs_.find(number);
      if (it == blobs_.end()) {
        return Status::Corruption("version edit counts garbage in blob file " + std::to_string(number) +
                                  ", which is not live");
      }
      auto st = std::make_shared<BlobFileState>(*it->second);
      // Compared before adding, so that a count near 2^64 cannot wrap.
      if (g.records > st->meta.records - st->garbage.records || g.bytes > st->meta.record_bytes - st->garbage.bytes) {
        return Status::Corruption("version edit counts more garbage in blob file " + std::to_string(number) +
                                  " than it holds (" + std::to_string(st->garbage.records) + " + " +
                                  std::to_string(g.records) + " of " + std::to_string(st->meta.records) +
                                  " records, " + std::to_string(st->garbage.bytes) + " + " +
                                  std::to_string(g.bytes) + " of " + std::to_string(st->meta.record_bytes) +
                                  " bytes)");
      }
      st->garbage.records += g.records;
      st->garbage.bytes += g.bytes;
      if (st->garbage.records == st->meta.records) blobs_.erase(it);  // nothing references it any more
      else it->second = std::move(st);
    }
    return Status::OK();
  }
  void SaveTo(Version* v) const {
    for (size_t l = 0; l < levels_.size(); l++) {
      FileList& out = v->files_[l];
      out.clear();
      for (const auto& [number, f] : levels_[l]) out.push_back(f);  // map order = file number order
      if (l > 0) {
        std::sort(out.begin(), out.end(), [this](const auto& a, const auto& b) {
          int r = ctx_->icmp.Compare(a->smallest.Encode(), b->smallest.Encode());
          return r != 0 ? r < 0 : a->number < b->number;
        });
      }
    }
    v->blob_files_ = blobs_;
  }

 private:
  Status BadLevel(int level) const {
    return Status::Corruption("version edit names level " + std::to_string(level) + " but num_levels is " +
                              std::to_string(levels_.size()));
  }
  const DbContext* ctx_;
  std::vector<std::map<uint64_t, std::shared_ptr<FileMetaData>>> levels_;
  BlobFileMap blobs_;
};

// ---- VersionSet ------------------------------------------------------------

VersionSet::VersionSet(const DbContext* ctx, Level0* level0)
    : ctx_(ctx), level0_(level0), num_levels_(ctx->options.num_levels), compact_pointer_(num_levels_) {
  auto v = std::make_shared<Version>(ctx_, level0_, num_levels_);
  Finalize(v.get());
  AppendVersion(std::move(v));
}

VersionSet::~VersionSet() {
  if (manifest_) manifest_->Close().IgnoreError();  // every record was synced when written
}

void VersionSet::AppendVersion(std::shared_ptr<Version> v) {
  std::erase_if(live_versions_, [](const std::weak_ptr<Version>& w) { return w.expired(); });
  v->level0_pin_ = level0_->Pin();
  live_versions_.push_back(v);
  current_ = std::move(v);
  if (on_new_version_) on_new_version_();
}

void VersionSet::ReinstallCurrent() {
  MXFS_ASSERT_HELD(*ctx_->mu);
  auto v = std::make_shared<Version>(ctx_, level0_, num_levels_);
  v->files_ = current_->files_;
  v->blob_files_ = current_->blob_files_;
  Finalize(v.get());
  AppendVersion(std::move(v));
}

void VersionSet::AddLiveFiles(std::set<uint64_t>* live) {
  std::erase_if(live_versions_, [](const std::weak_ptr<Version>& w) { return w.expired(); });
  for (const auto& w : live_versions_) {
    if (auto v = w.lock()) {
      for (int l = 0; l < v->num_levels(); l++) {
        for (const auto& f : v->files(l)) live->insert(f->number);
      }
      for (const auto& [number, b] : v->blob_files()) live->insert(number);
    }
  }
}

uint64_t VersionSet::MaxBytesForLevel(int level) const {
  double result = static_cast<double>(ctx_->options.max_bytes_for_level_base);
  for (int l = 1; l < level; l++) result *= ctx_->options.max_bytes_for_level_multiplier;
  return static_cast<uint64_t>(result);
}

void VersionSet::Finalize(Version* v) const {
  int best_level = 0;
  double best_score = level0_->CompactionScore(*v);
  for (int level = 1; level < num_levels_ - 1; level++) {
    double score = static_cast<double>(v->NumBytes(level)) / static_cast<double>(MaxBytesForLevel(level));
    if (score > best_score) {
      best_level = level;
      best_score = score;
    }
  }
  v->compaction_level_ = best_level;
  v->compaction_score_ = best_score;
  v->gc_inputs_.clear();
  v->gc_level_ = -1;
  v->gc_blob_ = 0;
  v->gc_score_ = 0;
  FindGcInputs(*v, nullptr, nullptr, &v->gc_level_, &v->gc_inputs_, &v->gc_blob_, &v->gc_score_);
}

// Which tables a blob file's garbage makes worth rewriting. A blob file is a
// candidate once its garbage ratio reaches the threshold; its live records
// go away only when every table that points into it has been rewritten (a
// compaction relocates the live values of all candidates it meets). The
// table to rewrite is one that may point into the candidate with the
// largest ratio (ties: the lower level, then the smaller key), grown to the
// right over adjacent tables of its level that may point into any candidate
// while the inputs stay within kGcInputFiles target file sizes: adjacent
// tables of one level cover a key range that no other table of the level
// overlaps, so the outputs can replace them in place. Not in L1, though:
// a column compaction may write new L1 tables meanwhile, into a gap between
// two tables that no compaction reads, and an output spanning that gap
// would overlap them; one table's own range is safe, since a column never
// starts inside a table that a compaction reads. L0 is never chosen: only
// compactions write blob indexes, and they write L1 and below.
bool VersionSet::FindGcInputs(const Version& v, const InternalKey* begin, const InternalKey* end, int* level,
                              FileList* inputs, uint64_t* blob, double* score) const {
  constexpr uint64_t kGcInputFiles = 4;
  if (!ctx_->options.blob_gc_compactions) return false;
  const double threshold = ctx_->options.blob_gc_garbage_ratio;
  std::map<uint64_t, double> candidates;
  uint64_t top_blob = 0;
  double top_ratio = 0;
  for (const auto& [number, b] : v.blob_files()) {
    const double ratio = b->GarbageRatio();
    if (b->garbage.records == 0 || ratio < threshold) continue;
    candidates.emplace(number, ratio);
    if (ratio > top_ratio) {
      top_ratio = ratio;
      top_blob = number;
    }
  }
  if (candidates.empty()) return false;
  const Comparator* ucmp = ctx_->icmp.user_comparator();
  auto in_range = [&](const FileMetaData& f) {
    if (begin != nullptr && ucmp->Compare(f.largest.user_key(), begin->user_key()) < 0) return false;
    if (end != nullptr && ucmp->Compare(f.smallest.user_key(), end->user_key()) > 0) return false;
    return true;
  };
  // The candidate with the largest ratio that f may point into (0: none).
  auto best_for = [&](const FileMetaData& f, double* ratio) -> uint64_t {
    if (!f.blob_refs_known) {
      *ratio = top_ratio;
      return top_blob;
    }
    uint64_t best = 0;
    *ratio = 0;
    for (uint64_t n : f.blob_refs) {
      auto it = candidates.find(n);
      if (it != candidates.end() && it->second > *ratio) {
        *ratio = it->second;
        best = n;
      }
    }
    return best;
  };
  int best_level = -1;
  size_t best_index = 0;
  uint64_t best_blob = 0;
  double best_ratio = 0;
  for (int l = 1; l < v.num_levels(); l++) {
    const FileList& files = v.files(l);
    for (size_t i = 0; i < files.size(); i++) {
      if (!in_range(*files[i])) continue;
      double ratio;
      const uint64_t n = best_for(*files[i], &ratio);
      if (n != 0 && ratio > best_ratio) {
        best_level = l;
        best_index = i;
        best_blob = n;
        best_ratio = ratio;
      }
    }
  }
  if (best_level < 0) return false;
  const FileList& files = v.files(best_level);
  inputs->assign(1, files[best_index]);
  uint64_t total = files[best_index]->file_size;
  const uint64_t limit = kGcInputFiles * ctx_->options.target_file_size_base;
  for (size_t i = best_index + 1; best_level > 1 && i < files.size(); i++) {
    const FileMetaData& f = *files[i];
    double ratio;
    if (!in_range(f) || best_for(f, &ratio) == 0 || total + f.file_size > limit) break;
    inputs->push_back(files[i]);
    total += f.file_size;
  }
  *level = best_level;
  *blob = best_blob;
  *score = best_ratio / threshold;
  return true;
}

std::unique_ptr<Compaction> VersionSet::NewGcCompaction(const std::shared_ptr<Version>& v, int level,
                                                        FileList inputs, uint64_t blob) {
  auto c = std::make_unique<Compaction>(ctx_, level, v);
  c->output_level_ = level;
  c->gc_blob_ = blob;
  c->inputs_[0] = std::move(inputs);
  return c;
}

Status VersionSet::Recover() {
  const std::string current_path = CurrentFileName(ctx_->dbname);
  auto current = ReadFileToString(ctx_->fs, current_path);
  if (!current) return current.error().WithContext("reading " + current_path);
  if (current->empty() || current->back() != '\n') {
    return Status::Corruption(current_path + ": expected a MANIFEST name ending in a newline, found " +
                              Slice(*current).ToEscaped());
  }
  current->pop_back();
  uint64_t manifest_number = 0;
  FileType type;
  if (!ParseFileName(*current, &manifest_number, &type) || type != FileType::kManifest) {
    return Status::Corruption(current_path + ": names " + Slice(*current).ToEscaped() +
                              ", which is not a MANIFEST file name");
  }
  const std::string manifest_path = ctx_->dbname + "/" + *current;
  auto file = ctx_->fs->NewSequentialFile(manifest_path);
  if (!file) return file.error().WithContext("CURRENT names " + *current);

  LogReader reader(std::move(*file));
  Builder builder(ctx_, current_.get());
  std::optional<uint64_t> next_file, log_number;
  std::optional<SequenceNumber> last_sequence;
  std::vector<std::pair<int, InternalKey>> pointers;
  std::string scratch;
  Slice record;
  uint64_t record_offset = 0;
  size_t records = 0;
  while (reader.ReadRecord(&record, &scratch)) {
    VersionEdit edit;
    Status s = edit.DecodeFrom(record);
    if (s.ok() && edit.comparator() && *edit.comparator() != ctx_->icmp.user_comparator()->Name()) {
      return Status::InvalidArgument(manifest_path + ": database uses comparator " + *edit.comparator() +
                                     ", this engine has " + ctx_->icmp.user_comparator()->Name());
    }
    if (s.ok()) s = builder.Apply(edit);
    if (!s.ok()) {
      return Status::Corruption(manifest_path + ": record at offset " + std::to_string(record_offset) + ": " +
                                std::string(s.message()));
    }
    if (edit.log_number()) log_number = edit.log_number();
    if (edit.next_file_number()) next_file = edit.next_file_number();
    if (edit.last_sequence()) last_sequence = edit.last_sequence();
    if (edit.level0_state()) level0_state_ = level0_->MergeState(level0_state_, *edit.level0_state());
    for (const auto& p : edit.compact_pointers()) pointers.push_back(p);
    record_offset = reader.LastRecordEnd();
    records++;
  }
  if (!reader.status().ok()) return reader.status();
  if (reader.DroppedBytes() > 0) {
    MXFS_LOG_WARN("%s: ignored a torn last record (%llu bytes at offset %llu)", manifest_path.c_str(),
                  static_cast<unsigned long long>(reader.DroppedBytes()),
                  static_cast<unsigned long long>(reader.LastRecordEnd()));
  }
  const char* missing = !next_file ? "next-file-number" : !log_number ? "log-number" : !last_sequence ? "last-sequence" : nullptr;
  if (missing != nullptr) {
    return Status::Corruption(manifest_path + ": truncated or incomplete: no " + missing + " field in " +
                              std::to_string(records) + " complete records (" +
                              std::to_string(reader.LastRecordEnd()) + " valid bytes, " +
                              std::to_string(reader.DroppedBytes()) + " torn bytes at the end)");
  }
  auto v = std::make_shared<Version>(ctx_, level0_, num_levels_);
  builder.SaveTo(v.get());
  Finalize(v.get());
  AppendVersion(std::move(v));
  for (const auto& [level, key] : pointers) compact_pointer_[level] = key.Encode().ToString();
  manifest_file_number_ = manifest_number;
  next_file_number_ = *next_file;
  log_number_ = *log_number;
  last_sequence_ = *last_sequence;
  MarkFileNumberUsed(manifest_number);
  MarkFileNumberUsed(log_number_);
  return Status::OK();
}

Status VersionSet::WriteSnapshot(LogWriter* log) {
  VersionEdit edit;
  edit.SetComparatorName(ctx_->icmp.user_comparator()->Name());
  if (!level0_state_.empty()) edit.SetLevel0State(level0_state_);
  for (int level = 0; level < num_levels_; level++) {
    if (!compact_pointer_[level].empty()) {
      InternalKey key;
      key.DecodeFrom(compact_pointer_[level]);
      edit.SetCompactPointer(level, key);
    }
    for (const auto& f : current_->files(level)) edit.AddFile(level, *f);
  }
  for (const auto& [number, b] : current_->blob_files()) {
    edit.AddBlobFile(b->meta);
    if (b->garbage.records > 0) edit.AddBlobGarbage(number, b->garbage);
  }
  std::string record;
  edit.EncodeTo(&record);
  return log->AddRecord(record, false);
}

Status VersionSet::LogAndApply(VersionEdit* edit, std::unique_lock<std::mutex>& lock) {
  MXFS_ASSERT_HELD(*lock.mutex());
  manifest_cv_.wait(lock, [this] { return !manifest_busy_; });
  manifest_busy_ = true;

  if (!edit->log_number()) edit->SetLogNumber(log_number_);
  if (manifest_ && manifest_->BytesWritten() > kMaxManifestSize) {
    manifest_->Close().IgnoreError();  // every record in it was synced; a new one replaces it
    manifest_.reset();
  }
  const bool new_manifest = manifest_ == nullptr;
  const uint64_t manifest_number = new_manifest ? NewFileNumber() : manifest_file_number_;
  edit->SetNextFile(next_file_number_);
  edit->SetLastSequence(last_sequence_);
  if (edit->level0_state()) edit->SetLevel0State(level0_->MergeState(level0_state_, *edit->level0_state()));

  auto v = std::make_shared<Version>(ctx_, level0_, num_levels_);
  Builder builder(ctx_, current_.get());
  Status s = builder.Apply(*edit);
  if (s.ok()) {
    builder.SaveTo(v.get());
    Finalize(v.get());
  }
  std::unique_ptr<LogWriter> fresh;
  const std::string manifest_path = ManifestFileName(ctx_->dbname, manifest_number);
  if (s.ok() && new_manifest) {
    auto f = ctx_->fs->NewWritableFile(manifest_path);
    if (f) {
      fresh = std::make_unique<LogWriter>(std::move(*f));
      s = WriteSnapshot(fresh.get());  // reads current_: stable while manifest_busy_
    } else {
      s = f.error();
    }
  }
  std::string record;
  edit->EncodeTo(&record);
  LogWriter* writer = new_manifest ? fresh.get() : manifest_.get();

  lock.unlock();
  const bool adds_files = !edit->new_files().empty() || !edit->new_blob_files().empty();
  if (s.ok() && adds_files && (new_manifest || !edit->new_files_dir_synced())) {
    // The new files' directory entries must be durable before the MANIFEST
    // names them (unless the caller synced the directory after creating
    // them and the MANIFEST is not new).
    s = ctx_->fs->SyncDir(ctx_->dbname);
  }
  if (s.ok()) s = writer->AddRecord(record, /*sync=*/true);
  if (s.ok() && new_manifest) {
    char name[64];
    std::snprintf(name, sizeof(name), "MANIFEST-%06llu\n", static_cast<unsigned long long>(manifest_number));
    s = WriteFileAtomic(ctx_->fs, CurrentFileName(ctx_->dbname), name);
  }
  lock.lock();

  if (s.ok()) {
    if (new_manifest) {
      manifest_ = std::move(fresh);
      manifest_file_number_ = manifest_number;
    }
    log_number_ = *edit->log_number();
    if (edit->level0_state()) level0_state_ = *edit->level0_state();  // merged above
    for (const auto& [level, key] : edit->compact_pointers()) compact_pointer_[level] = key.Encode().ToString();
    AppendVersion(std::move(v));
  } else {
    MXFS_LOG_ERROR("MANIFEST update failed: %s", s.ToString().c_str());
    if (!new_manifest) {
      // The record may be half written: the next edit starts a new MANIFEST.
      manifest_->Close().IgnoreError();
      manifest_.reset();
    }
  }
  manifest_busy_ = false;
  manifest_cv_.notify_all();
  return s;
}

bool VersionSet::NeedsCompaction() const {
  return current_->compaction_score() >= 1 || !current_->gc_inputs().empty();
}

void VersionSet::GetRange(const FileList& inputs, InternalKey* smallest, InternalKey* largest) const {
  smallest->Clear();
  largest->Clear();
  for (size_t i = 0; i < inputs.size(); i++) {
    const auto& f = inputs[i];
    if (i == 0 || ctx_->icmp.Compare(f->smallest.Encode(), smallest->Encode()) < 0) *smallest = f->smallest;
    if (i == 0 || ctx_->icmp.Compare(f->largest.Encode(), largest->Encode()) > 0) *largest = f->largest;
  }
}

void VersionSet::GetRange2(const FileList& a, const FileList& b, InternalKey* smallest, InternalKey* largest) const {
  FileList all = a;
  all.insert(all.end(), b.begin(), b.end());
  GetRange(all, smallest, largest);
}

std::unique_ptr<Compaction> VersionSet::PickCompaction() {
  MXFS_ASSERT_HELD(*ctx_->mu);
  const bool size_due = current_->compaction_score() >= 1;
  const bool gc_due = !current_->gc_inputs().empty();
  if (gc_due && (!size_due || !last_pick_gc_)) {
    last_pick_gc_ = true;
    return NewGcCompaction(current_, current_->gc_level(), current_->gc_inputs(), current_->gc_blob());
  }
  last_pick_gc_ = false;
  if (!size_due) return nullptr;
  const int level = current_->compaction_level();
  if (level == 0) return level0_->PickCompaction(this, current_);
  return PickLeveledCompaction(level, current_);
}

std::unique_ptr<Compaction> VersionSet::PickLeveledCompaction(int level, const std::shared_ptr<Version>& v) {
  if (level + 1 >= num_levels_ || v->files(level).empty()) return nullptr;
  auto c = std::make_unique<Compaction>(ctx_, level, v);
  for (const auto& f : v->files(level)) {
    if (compact_pointer_[level].empty() || ctx_->icmp.Compare(f->largest.Encode(), compact_pointer_[level]) > 0) {
      c->inputs_[0].push_back(f);
      break;
    }
  }
  if (c->inputs_[0].empty()) c->inputs_[0].push_back(v->files(level)[0]);  // wrap around
  if (level == 0) {
    InternalKey smallest, largest;
    GetRange(c->inputs_[0], &smallest, &largest);
    v->GetOverlappingInputs(0, &smallest, &largest, &c->inputs_[0]);
  }
  SetupOtherInputs(c.get());
  return c;
}

void VersionSet::SetupOtherInputs(Compaction* c) {
  const int level = c->level();
  const Version* v = c->input_version_.get();
  InternalKey smallest, largest;
  GetRange(c->inputs_[0], &smallest, &largest);
  v->GetOverlappingInputs(level + 1, &smallest, &largest, &c->inputs_[1]);
  InternalKey all_start, all_limit;
  GetRange2(c->inputs_[0], c->inputs_[1], &all_start, &all_limit);

  // Grow the level's inputs if that pulls in no more files below.
  if (!c->inputs_[1].empty()) {
    FileList expanded0;
    v->GetOverlappingInputs(level, &all_start, &all_limit, &expanded0);
    const uint64_t limit = 25 * ctx_->options.target_file_size_base;
    if (expanded0.size() > c->inputs_[0].size() &&
        TotalFileSize(expanded0) + TotalFileSize(c->inputs_[1]) < limit) {
      InternalKey new_start, new_limit;
      GetRange(expanded0, &new_start, &new_limit);
      FileList expanded1;
      v->GetOverlappingInputs(level + 1, &new_start, &new_limit, &expanded1);
      if (expanded1.size() == c->inputs_[1].size()) {
        c->inputs_[0] = std::move(expanded0);
        c->inputs_[1] = std::move(expanded1);
        largest = new_limit;
        GetRange2(c->inputs_[0], c->inputs_[1], &all_start, &all_limit);
      }
    }
  }
  if (level + 2 < num_levels_) v->GetOverlappingInputs(level + 2, &all_start, &all_limit, &c->grandparents_);
  // The next compaction of this level starts after this one's range.
  compact_pointer_[level] = largest.Encode().ToString();
  c->edit_.SetCompactPointer(level, largest);
}

std::unique_ptr<Compaction> VersionSet::CompactRange(int level, const InternalKey* begin, const InternalKey* end) {
  if (level + 1 >= num_levels_) return nullptr;
  FileList inputs;
  current_->GetOverlappingInputs(level, begin, end, &inputs);
  if (inputs.empty()) return nullptr;
  if (level > 0) {
    // Bound one manual step; the caller continues from where it ended.
    uint64_t total = 0;
    for (size_t i = 0; i < inputs.size(); i++) {
      total += inputs[i]->file_size;
      if (total >= ctx_->options.target_file_size_base) {
        inputs.resize(i + 1);
        break;
      }
    }
  }
  auto c = std::make_unique<Compaction>(ctx_, level, current_);
  c->inputs_[0] = std::move(inputs);
  SetupOtherInputs(c.get());
  return c;
}

std::unique_ptr<Compaction> VersionSet::CompactRangeGc(const InternalKey* begin, const InternalKey* end) {
  int level = -1;
  FileList inputs;
  uint64_t blob = 0;
  double score = 0;
  if (!FindGcInputs(*current_, begin, end, &level, &inputs, &blob, &score)) return nullptr;
  return NewGcCompaction(current_, level, std::move(inputs), blob);
}

std::unique_ptr<Iterator> VersionSet::MakeInputIterator(Compaction* c) {
  ReadOptions options;
  options.verify_checksums = true;
  options.fill_cache = false;
  std::vector<std::unique_ptr<Iterator>> iters;
  for (int which = 0; which < 2; which++) {
    const FileList& files = c->inputs(which);
    if (files.empty()) continue;
    if (c->level() + which == 0) {
      for (const auto& f : files) iters.push_back(ctx_->table_cache->NewIterator(options, f->number, f->file_size));
    } else {
      iters.push_back(NewLevelIterator(ctx_->table_cache, options, &ctx_->icmp, files));
    }
  }
  if (iters.empty()) return NewEmptyIterator();
  return NewMergingIterator(&ctx_->icmp, std::move(iters));
}

std::string VersionSet::LevelSummary() const {
  std::string r = "files[";
  for (int l = 0; l < num_levels_; l++) r += " " + std::to_string(current_->NumFiles(l));
  return r + " ]";
}

}  // namespace mxfs
