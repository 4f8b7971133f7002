#include "kvcore/compaction_runner.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>

#include "base/lock_check.h"
#include "base/logging.h"
#include "kvcore/blob_store.h"
#include "kvcore/db_context.h"
#include "kvcore/filename.h"
#include "kvcore/merger.h"
#include "kvcore/table_cache.h"
#include "kvcore/version_set.h"
#include "nvm/kill_point.h"
#include "ssd/blob_file.h"

namespace mxfs {

namespace {

// The options of a compaction's output files (tables and blob files): their
// writeback starts every MiB while they are written, so that the fsync
// before the MANIFEST edit waits for the last MiB, not the whole file
// (BENCHMARKS.md, issue 16: the fill waited for these fsyncs).
FileOptions OutputFileOptions(const FileOptions& base) {
  FileOptions fo = base;
  fo.bytes_per_sync = 1 << 20;
  return fo;
}

// At most this many fdatasyncs of one merge's outputs wait at once.
constexpr size_t kMaxConcurrentSyncs = 8;

}  // namespace

// Makes a merge's outputs durable while it runs: each finished output's
// fdatasync starts at once on one of up to kMaxConcurrentSyncs threads
// (mxfs-outsync), so that the merge goes on computing while the disk
// flushes, and Finish waits only for the last outputs and the directory
// sync that joins them. Syncs waiting together cost about one device flush
// (the block layer merges concurrent cache flushes; BENCHMARKS.md, issue 16
// session 14).
//
// Thread-safety: Add, AddDirSync and Finish from one thread at a time (the
// merging thread, then whoever finishes a deferred merge's syncs).
class OutputSyncer {
 public:
  OutputSyncer() = default;
  OutputSyncer(const OutputSyncer&) = delete;
  OutputSyncer& operator=(const OutputSyncer&) = delete;
  // Waits for the syncs still running and closes every file (after a
  // failure: the caller removes the files).
  ~OutputSyncer() { Finish().IgnoreError(); }

  // Starts syncing f (written and flushed); Finish closes it.
  void Add(std::unique_ptr<WritableFile> f) {
    WritableFile* file = f.get();
    std::lock_guard<std::mutex> g(mu_);
    files_.push_back(std::move(f));
    Queue([file] { return file->Sync(); });
  }
  // Starts syncing dir (after every output's creation).
  void AddDirSync(FileSystem* fs, std::string dir) {
    std::lock_guard<std::mutex> g(mu_);
    Queue([fs, dir = std::move(dir)] { return fs->SyncDir(dir); });
  }
  // Waits for every sync, closes the files and returns the first failure.
  [[nodiscard]] Status Finish() {
    {
      std::unique_lock<std::mutex> l(mu_);
      done_ = true;
      cv_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    Status s = std::move(first_error_);
    first_error_ = Status::OK();
    for (auto& f : files_) {
      Status cs = f->Close();
      if (s.ok()) s = std::move(cs);
    }
    files_.clear();
    done_ = false;
    return s;
  }

 private:
  // mu_ held.
  void Queue(std::function<Status()> job) {
    queue_.push_back(std::move(job));
    if (idle_ > 0) {
      cv_.notify_one();
    } else if (threads_.size() < kMaxConcurrentSyncs) {
      threads_.emplace_back([this] { Run(); });
    }
  }
  void Run() {
    SetThreadName("mxfs-outsync");
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      if (queue_.empty()) {
        if (done_) return;
        idle_++;
        cv_.wait(l, [this] { return done_ || !queue_.empty(); });
        idle_--;
        continue;
      }
      std::function<Status()> job = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      Status s = job();
      l.lock();
      if (first_error_.ok() && !s.ok()) first_error_ = std::move(s);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<Status()>> queue_;  // mu_
  size_t idle_ = 0;                             // mu_: threads waiting for a job
  bool done_ = false;                           // mu_: Finish is waiting
  Status first_error_;                          // mu_
  std::vector<std::thread> threads_;            // the merging thread's
  std::vector<std::unique_ptr<WritableFile>> files_;
};


Status CompactionRunner::Run(Compaction* c, std::unique_lock<std::mutex>& l, SequenceNumber smallest_snapshot,
                             CompactionRecord* rec, std::vector<std::unique_ptr<Iterator>> extra) {
  const bool from_level0 = !extra.empty();
  Describe(c, rec);
  l.unlock();
  std::unique_ptr<Iterator> input = versions_->MakeInputIterator(c);
  if (from_level0) {
    extra.push_back(std::move(input));
    input = NewMergingIterator(&ctx_->icmp, std::move(extra));
  }
  CompactionOutput out;
  Status s = Merge(c, input.get(), from_level0, smallest_snapshot, &out);
  input.reset();
  l.lock();
  return Install(c, l, rec, from_level0, std::move(s), out);
}

void CompactionRunner::Describe(Compaction* c, CompactionRecord* rec) const {
  MXFS_ASSERT_HELD(*mu_);
  rec->bytes_in = c->InputBytes();
  InternalKey smallest, largest;
  bool first = true;
  for (int which = 0; which < 2; which++) {
    for (const auto& f : c->inputs(which)) {
      if (first || ctx_->icmp.Compare(f->smallest.Encode(), smallest.Encode()) < 0) smallest = f->smallest;
      if (first || ctx_->icmp.Compare(f->largest.Encode(), largest.Encode()) > 0) largest = f->largest;
      first = false;
    }
  }
  if (!first) {
    rec->smallest = smallest.user_key().ToEscaped();
    rec->largest = largest.user_key().ToEscaped();
  }
}

CompactionOutput::CompactionOutput() = default;
CompactionOutput::~CompactionOutput() = default;
CompactionOutput::CompactionOutput(CompactionOutput&&) noexcept = default;
CompactionOutput& CompactionOutput::operator=(CompactionOutput&&) noexcept = default;

Status CompactionOutput::FinishSyncs() {
  Status s;
  for (auto& syncer : syncs) {
    Status fs = syncer->Finish();
    if (s.ok()) s = std::move(fs);
  }
  syncs.clear();
  if (s.ok() && !blobs.empty()) MXFS_KILL_POINT("kvcore.blob.after_sync");  // named by no MANIFEST edit yet
  return s;
}

void CompactionOutput::Append(CompactionOutput&& o) {
  tables.insert(tables.end(), o.tables.begin(), o.tables.end());
  table_numbers.insert(table_numbers.end(), o.table_numbers.begin(), o.table_numbers.end());
  blobs.insert(blobs.end(), o.blobs.begin(), o.blobs.end());
  blob_numbers.insert(blob_numbers.end(), o.blob_numbers.begin(), o.blob_numbers.end());
  for (const auto& [number, g] : o.garbage) {
    garbage[number].records += g.records;
    garbage[number].bytes += g.bytes;
  }
  blob_bytes_relocated += o.blob_bytes_relocated;
  dir_synced = dir_synced && o.dir_synced;
  for (auto& syncer : o.syncs) syncs.push_back(std::move(syncer));
  o.syncs.clear();
}

Status CompactionRunner::Merge(Compaction* c, Iterator* input, bool from_level0, SequenceNumber smallest_snapshot,
                               CompactionOutput* result, bool wait_for_syncs) {
  const Comparator* ucmp = ctx_->icmp.user_comparator();
  const uint64_t min_blob = ctx_->options.min_blob_size;
  // Blob files whose live values this compaction moves (garbage ratio reached).
  std::set<uint64_t> relocate;
  for (const auto& [number, b] : c->input_version()->blob_files()) {
    if (b->GarbageRatio() >= ctx_->options.blob_gc_garbage_ratio) relocate.insert(number);
  }
  struct Output {
    FileMetaData meta;
    std::unique_ptr<WritableFile> file;
    std::unique_ptr<TableBuilder> builder;
  };
  Output out;
  bool open = false;
  std::set<uint64_t> out_refs;  // blob files the open output table points into
  struct BlobOutput {
    BlobFileMeta meta;
    std::unique_ptr<WritableFile> file;
    std::unique_ptr<BlobFileBuilder> builder;
  };
  BlobOutput blob;

  auto new_number = [&](std::vector<uint64_t>* numbers) {
    std::lock_guard<std::mutex> g(*mu_);
    const uint64_t number = versions_->NewFileNumber();
    pending_outputs_->insert(number);
    numbers->push_back(number);
    result->dir_synced = false;  // until the syncer's directory sync
    return number;
  };
  // Finished outputs start syncing at once; Merge waits for them (and the
  // directory sync) before it returns, and Install writes the MANIFEST edit
  // naming them only after that.
  auto syncer = std::make_unique<OutputSyncer>();
  auto finish_output = [&]() -> Status {
    Status s = out.builder->Finish();
    if (s.ok()) s = out.file->Flush();  // readable below (FindTable)
    if (s.ok()) syncer->Add(std::move(out.file));
    else out.file->Close().IgnoreError();  // removed by the caller
    out.meta.file_size = out.builder->FileSize();
    out.meta.blob_refs.assign(out_refs.begin(), out_refs.end());
    out.meta.blob_refs_known = true;
    out_refs.clear();
    out.builder.reset();
    out.file.reset();
    open = false;
    if (s.ok()) {
      auto t = ctx_->table_cache->FindTable(out.meta.number, out.meta.file_size);  // readable before it is installed
      if (!t) s = t.error();
    }
    if (s.ok()) result->tables.push_back(out.meta);
    return s;
  };
  // A blob file is synced (with the tables, at the end) before the tables
  // that point into it are installed (Install writes the MANIFEST edit after
  // Merge returns).
  auto finish_blob = [&]() -> Status {
    Status s = blob.builder->Finish();  // flushes to the file
    if (s.ok()) syncer->Add(std::move(blob.file));
    else blob.file->Close().IgnoreError();  // removed by the caller
    blob.meta.file_size = blob.builder->FileSize();
    blob.meta.records = blob.builder->num_records();
    blob.meta.record_bytes = blob.builder->record_bytes();
    blob.builder.reset();
    blob.file.reset();
    if (s.ok()) result->blobs.push_back(blob.meta);
    return s;
  };
  // Writes value into the current blob file (opening one if needed) and sets
  // *index to the encoded blob index.
  // pinned: value stays valid until the blob file is finished (a container
  // row's bytes; the input iterator lives until Merge returns).
  auto separate = [&](const Slice& user_key, const Slice& value, bool pinned, std::string* index) -> Status {
    if (blob.builder && blob.builder->FileSize() >= ctx_->options.blob_file_size) MXFS_RETURN_IF_ERROR(finish_blob());
    if (!blob.builder) {
      const uint64_t number = new_number(&result->blob_numbers);
      auto file = ctx_->fs->NewWritableFile(BlobFileName(ctx_->dbname, number), OutputFileOptions(ctx_->file_options));
      if (!file) return file.error();
      blob.file = std::move(*file);
      blob.builder = std::make_unique<BlobFileBuilder>(blob.file.get());
      blob.meta = BlobFileMeta();
      blob.meta.number = number;
    }
    BlobIndex bi;
    bi.file_number = blob.meta.number;
    bi.value_size = value.size();
    MXFS_RETURN_IF_ERROR(blob.builder->Add(user_key, value, &bi.offset, pinned));
    if (blob.builder->num_records() == 2) MXFS_KILL_POINT("kvcore.blob.mid_file");  // the file has no footer
    index->clear();
    bi.EncodeTo(index);
    return Status::OK();
  };
  // The blob record an entry stops referencing.
  auto count_garbage = [&](const Slice& user_key, const BlobIndex& bi) {
    BlobGarbage& g = result->garbage[bi.file_number];
    g.records++;
    g.bytes += BlobRecordSize(user_key.size(), bi.value_size);
  };

  input->SeekToFirst();
  uint64_t entries = 0;
  Status s;
  std::string current_user_key;
  bool has_current_user_key = false;
  SequenceNumber last_sequence_for_key = kMaxSequenceNumber;
  std::string new_value, moved;
  for (; input->Valid() && !shutting_down_->load(std::memory_order_acquire); input->Next()) {
    const Slice key = input->key();
    ParsedInternalKey ikey;
    if (!ParseInternalKey(key, &ikey)) {
      s = Status::Corruption("compaction input holds a malformed internal key " + key.ToEscaped());
      break;
    }
    if (!has_current_user_key || ucmp->Compare(ikey.user_key, current_user_key) != 0) {
      // A new user key: the only place an output file may end, so that a
      // user key never spans two files of one level.
      const bool stop = c->ShouldStopBefore(key);
      if (open && (stop || out.builder->FileSize() >= c->MaxOutputFileSize())) {
        s = finish_output();
        if (!s.ok()) break;
      }
      current_user_key.assign(ikey.user_key.data(), ikey.user_key.size());
      has_current_user_key = true;
      last_sequence_for_key = kMaxSequenceNumber;
    }
    bool drop = false;
    if (last_sequence_for_key <= smallest_snapshot) {
      drop = true;  // a newer entry of this key is visible to every snapshot
    } else if (ikey.type == kTypeDeletion && ikey.sequence <= smallest_snapshot &&
               c->IsBaseLevelForKey(ikey.user_key)) {
      drop = true;  // nothing below to hide, and no snapshot sees older entries
    }
    last_sequence_for_key = ikey.sequence;
    if (from_level0 && ++entries == 100) MXFS_KILL_POINT("kvcore.column.mid_merge");  // some output written
    if (drop) {
      if (ikey.type == kTypeBlobIndex) {
        BlobIndex bi;
        s = bi.DecodeFrom(input->value());
        if (!s.ok()) break;
        count_garbage(ikey.user_key, bi);
      }
      continue;
    }
    Slice value = input->value();
    std::string out_key;
    Slice out_ikey = key;
    uint64_t ref = 0;  // the blob file the output entry points into (0: none)
    if (ikey.type == kTypeValue && min_blob > 0 && value.size() >= min_blob) {
      s = separate(ikey.user_key, value, input->ValuePinned(), &new_value);
      if (!s.ok()) break;
      AppendInternalKey(&out_key, ikey.user_key, ikey.sequence, kTypeBlobIndex);
      out_ikey = out_key;
      value = new_value;
      ref = blob.meta.number;
    } else if (ikey.type == kTypeBlobIndex) {
      BlobIndex bi;
      s = bi.DecodeFrom(value);
      if (!s.ok()) break;
      ref = bi.file_number;
      if (relocate.contains(bi.file_number)) {
        s = ctx_->blob_store->Read(ikey.user_key, bi, &moved);
        if (s.ok()) s = separate(ikey.user_key, moved, false, &new_value);
        if (!s.ok()) break;
        count_garbage(ikey.user_key, bi);
        result->blob_bytes_relocated += moved.size();
        value = new_value;
        ref = blob.meta.number;
      }
    }
    if (!open) {
      const uint64_t number = new_number(&result->table_numbers);
      auto file = ctx_->fs->NewWritableFile(TableFileName(ctx_->dbname, number), OutputFileOptions(ctx_->file_options));
      if (!file) {
        s = file.error();
        break;
      }
      out.file = std::move(*file);
      out.builder = std::make_unique<TableBuilder>(ctx_->table_options, out.file.get());
      out.meta = FileMetaData();
      out.meta.number = number;
      out.meta.smallest.DecodeFrom(out_ikey);
      out.meta.smallest_seq = kMaxSequenceNumber;
      open = true;
    }
    if (ref != 0) out_refs.insert(ref);
    out.meta.largest.DecodeFrom(out_ikey);
    out.meta.smallest_seq = std::min(out.meta.smallest_seq, ikey.sequence);
    out.meta.largest_seq = std::max(out.meta.largest_seq, ikey.sequence);
    out.builder->Add(out_ikey, value);
  }
  if (s.ok() && shutting_down_->load()) s = Status::Busy("compaction interrupted: the database is closing");
  if (s.ok()) s = input->status();
  if (s.ok() && blob.builder) s = finish_blob();
  if (s.ok() && open) s = finish_output();
  if (s.ok() && !result->dir_synced) {
    MXFS_KILL_POINT("kvcore.compaction.before_output_sync");  // outputs complete, maybe not durable
    syncer->AddDirSync(ctx_->fs, ctx_->dbname);  // every output's entry exists now
    result->dir_synced = true;  // once the syncs finish
    result->syncs.push_back(std::move(syncer));
    if (wait_for_syncs) s = result->FinishSyncs();
  }
  if (open) {
    out.builder->Abandon();
    out.builder.reset();
    out.file->Close().IgnoreError();  // the file is removed by the caller
    out.file.reset();
  }
  if (blob.builder) {
    blob.builder.reset();
    blob.file->Close().IgnoreError();  // likewise
    blob.file.reset();
  }
  return s;
}

Status CompactionRunner::Install(Compaction* c, std::unique_lock<std::mutex>& l, CompactionRecord* rec,
                                 bool from_level0, Status s, const CompactionOutput& out) {
  MXFS_ASSERT_HELD(*mu_);
  if (s.ok() && !out.syncs.empty()) s = Status::InvalidArgument("compaction outputs installed before their syncs finished");
  if (!s.ok()) {
    l.unlock();
    for (uint64_t n : out.table_numbers) ctx_->fs->RemoveFile(TableFileName(ctx_->dbname, n)).IgnoreError();  // may not exist
    for (uint64_t n : out.blob_numbers) ctx_->fs->RemoveFile(BlobFileName(ctx_->dbname, n)).IgnoreError();
    l.lock();
  }
  uint64_t bytes_out = 0;
  for (const auto& f : out.tables) bytes_out += f.file_size;
  for (const auto& b : out.blobs) bytes_out += b.file_size;
  if (s.ok()) {
    c->AddInputDeletions(c->edit());
    for (const auto& f : out.tables) c->edit()->AddFile(c->output_level(), f);
    for (const auto& b : out.blobs) c->edit()->AddBlobFile(b);
    for (const auto& [number, g] : out.garbage) c->edit()->AddBlobGarbage(number, g);
    c->edit()->set_new_files_dir_synced(out.dir_synced);
    if (from_level0) {
      l.unlock();
      MXFS_KILL_POINT("kvcore.column.before_manifest");
      l.lock();
    } else {
      MXFS_KILL_POINT("kvcore.compaction.before_manifest");  // only a getenv unless armed
      if (c->is_gc()) MXFS_KILL_POINT("kvcore.blob.gc_before_manifest");  // relocated values synced, not named
    }
    s = versions_->LogAndApply(c->edit(), l);
    if (s.ok() && !from_level0) MXFS_KILL_POINT("kvcore.compaction.after_manifest");  // inputs not yet deleted
    if (s.ok() && c->is_gc()) MXFS_KILL_POINT("kvcore.blob.gc_after_manifest");  // the old blob file not yet deleted
  }
  for (uint64_t n : out.table_numbers) pending_outputs_->erase(n);
  for (uint64_t n : out.blob_numbers) pending_outputs_->erase(n);
  if (s.ok()) {
    stats_.compactions++;
    stats_.bytes_read += rec->bytes_in;
    stats_.bytes_written += bytes_out;
    for (const auto& b : out.blobs) {
      stats_.blob_files++;
      stats_.blob_bytes_written += b.file_size;
    }
    stats_.blob_bytes_relocated += out.blob_bytes_relocated;
    rec->bytes_out = bytes_out;
  }
  return s;
}

const CompactionStats& CompactionRunner::stats() const {
  MXFS_ASSERT_HELD(*mu_);
  return stats_;
}

}  // namespace mxfs
