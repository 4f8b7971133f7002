// DBImpl's write path: Put, Delete and Write enqueue a Writer; the leader
// of the queue writes a group of batches to the WAL and the memtable
// (WriteGroup), and MakeRoomForWrite switches memtables and paces writers
// while the container or the memtables are full. The rest of DBImpl is in
// kvcore/db_impl.cc.
#include "kvcore/db_impl.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>

#include "base/lock_check.h"
#include "base/logging.h"
#include "kvcore/background.h"
#include "kvcore/db_stats.h"
#include "kvcore/filename.h"
#include "kvcore/write_batch_internal.h"
#include "kvcore/write_waiter.h"
#include "nvm/kill_point.h"

namespace mxfs {

namespace {

// Groups one leader writes before it hands over to the next writer.
constexpr int kMaxGroupsLed = 8;

}  // namespace

struct DBImpl::Writer {
  WriteBatch* batch = nullptr;
  bool sync = false;
  Status status;                // set by the leader before waiter says kDone
  Writer* next_done = nullptr;  // the leader's list of written writers
  WriteWaiter waiter;
};

Status DBImpl::Put(const WriteOptions& options, const Slice& key, const Slice& value) {
  WriteBatch batch;
  batch.Put(key, value);
  return Write(options, &batch);
}

Status DBImpl::Delete(const WriteOptions& options, const Slice& key) {
  WriteBatch batch;
  batch.Delete(key);
  return Write(options, &batch);
}

Status DBImpl::Write(const WriteOptions& options, WriteBatch* batch) {
  ReaderPresence::NoteWrite();  // this thread is no pure reader (background.h)
  if (batch == nullptr) return Status::InvalidArgument("Write: batch is null");
  if (batch->Count() == 0) {
    std::lock_guard<std::mutex> g(mu_);
    return WritableStatus();
  }
  return WriteImpl(options, batch);
}

Status DBImpl::WritableStatus() const {
  MXFS_ASSERT_HELD(mu_);
  if (closed_ || !opened_) return Status::InvalidArgument("database " + ctx_.dbname + " is closed");
  if (ctx_.options.read_only) return Status::ReadOnly("database " + ctx_.dbname + " was opened read-only");
  if (!bg_error_.ok()) {
    return Status::ReadOnly("database " + ctx_.dbname + " is read-only after a background " + bg_error_where_ +
                            " error: " + bg_error_.ToString());
  }
  return Status::OK();
}

Status DBImpl::WriteImpl(const WriteOptions& options, WriteBatch* batch) {
  Writer w;
  w.batch = batch;
  w.sync = options.sync;
  std::unique_lock<std::mutex> l(mu_);
  writers_.push_back(&w);
  if (writers_.size() > 1) {
    // A leader is at work: it writes our batch or makes us the next leader.
    l.unlock();
    if (w.waiter.Await() == WriteWaiter::kDone) return w.status;
    l.lock();
  }

  // The leader. It writes the group at the front of the queue, then, while
  // other writers wait behind it and within kMaxGroupsLed, the next group
  // too: it is on a CPU already, where the writer it would hand over to
  // may first have to be woken and scheduled. Writers whose group is
  // written are released after each group, outside mu_.
  Status own;
  for (int led = 0;; led++) {
    Writer* first = writers_.front();
    Writer* last_writer = first;
    Status s = WritableStatus();
    if (s.ok()) s = MakeRoomForWrite(l, first->batch == nullptr);
    if (s.ok() && first->batch != nullptr) s = WriteGroup(l, &last_writer);
    Writer* done = nullptr;  // the group but w, linked through next_done
    while (true) {
      Writer* ready = writers_.front();
      writers_.pop_front();
      if (ready->batch != nullptr) stats_.batches++;
      if (ready == &w) {
        own = s;
      } else {
        ready->status = s;
        ready->next_done = done;
        done = ready;
      }
      if (ready == last_writer) break;
    }
    const bool more = !writers_.empty() && writers_.front()->batch != nullptr && led + 1 < kMaxGroupsLed;
    Writer* next_leader = !more && !writers_.empty() ? writers_.front() : nullptr;
    if (writers_.empty() && closing_) bg_cv_.notify_all();  // Close waits for the queue to drain
    l.unlock();
    while (done != nullptr) {
      Writer* d = done;
      done = d->next_done;  // d may be gone once it is set done
      d->waiter.Set(WriteWaiter::kDone);
    }
    if (!more) {
      // Until it is told, the next leader waits: nobody else touches it.
      if (next_leader != nullptr) next_leader->waiter.Set(WriteWaiter::kLeader);
      return own;
    }
    l.lock();
  }
}

Status DBImpl::WriteGroup(std::unique_lock<std::mutex>& l, Writer** last_writer) {
  MXFS_ASSERT_HELD(mu_);
  SequenceNumber last_sequence = versions_->LastSequence();
  bool sync = false;
  WriteBatch* group = BuildBatchGroup(last_writer, &sync);
  group->SetSequence(last_sequence + 1);
  last_sequence += group->Count();
  std::shared_ptr<MemTable> mem = mem_;
  WalWriter* log = log_.get();
  const uint64_t user_bytes = WriteBatchInternal::UserBytes(*group);
  const uint64_t wal_before = log->BytesWritten();
  // Groups stay within the log's largest record (BuildBatchGroup), so
  // only a batch that is too large by itself gets here; it alone fails.
  const bool too_large = group->Rep().size() > log->MaxRecordSize();
  l.unlock();
  // Only the leader runs here: the log and the memtable have one writer.
  Status s;
  if (too_large) {
    s = Status::InvalidArgument("a write batch of " + std::to_string(group->Rep().size()) +
                                " bytes is larger than the write-ahead log's largest record (" +
                                std::to_string(log->MaxRecordSize()) + " bytes)");
  } else {
    s = log->AddRecord(group->Rep(), sync);
  }
  // A log that is full until a flush releases it (a PM WAL whose flush waits
  // for room in the container, or is slow): wait for the flush as a writer
  // at a full memtable does, and give up on a background error or a close,
  // with nothing written.
  bool not_written = too_large;
  while (s.IsBusy()) {
    l.lock();
    WaitForFlush(l, std::chrono::milliseconds(10));
    Status ws = WritableStatus();
    if (ws.ok() && shutting_down_) ws = Status::InvalidArgument("database " + ctx_.dbname + " is closing");
    l.unlock();
    if (!ws.ok()) {
      s = ws;
      not_written = true;
      break;
    }
    s = log->AddRecord(group->Rep(), sync);
  }
  bool log_error = !s.ok() && !not_written;
  if (s.ok()) s = WriteBatchInternal::InsertInto(*group, mem.get());
  l.lock();
  if (not_written) {
    // Nothing was written; the sequence numbers were not used.
  } else if (log_error) {
    RecordBackgroundError(s, "WAL write");
  } else if (!s.ok()) {
    RecordBackgroundError(s, "memtable insert");
  } else {
    versions_->SetLastSequence(last_sequence);
    level0_->WriteGroupDone(user_bytes, Load());
    stats_.groups++;
    if (sync) stats_.syncs++;
    stats_.user_bytes += user_bytes;
    stats_.wal_bytes += log->BytesWritten() - wal_before;
    stats_.records += group->Count();
  }
  if (group == &tmp_batch_) tmp_batch_.Clear();
  return s;
}

WriteBatch* DBImpl::BuildBatchGroup(Writer** last_writer, bool* sync) {
  MXFS_ASSERT_HELD(mu_);
  Writer* first = writers_.front();
  WriteBatch* result = first->batch;
  size_t size = first->batch->ApproximateSize();
  *sync = first->sync;
  // Small writes must not wait behind a huge group; and a group is one WAL
  // record (the batch sizes summed overcount it by 12 bytes per batch).
  size_t max_size = 1 << 20;
  if (size <= (128 << 10)) max_size = size + (128 << 10);
  max_size = static_cast<size_t>(std::min<uint64_t>(max_size, log_->MaxRecordSize()));
  *last_writer = first;
  for (auto it = writers_.begin() + 1; it != writers_.end(); ++it) {
    Writer* w = *it;
    if (w->batch == nullptr) break;  // a forced memtable switch goes alone
    size += w->batch->ApproximateSize();
    if (size > max_size) break;
    if (result == first->batch) {
      tmp_batch_.Clear();
      tmp_batch_.Append(*first->batch);
      result = &tmp_batch_;
    }
    result->Append(*w->batch);
    *sync = *sync || w->sync;
    *last_writer = w;
  }
  return result;
}

MemTableLoad DBImpl::Load() const {
  MXFS_ASSERT_HELD(mu_);
  return MemTableLoad{mem_.get(), &imms_, last_switch_us_};
}

Status DBImpl::MakeRoomForWrite(std::unique_lock<std::mutex>& l, bool force) {
  MXFS_ASSERT_HELD(mu_);
  bool allow_delay = !force;
  const int slowdown = ctx_.options.level0_slowdown_writes_trigger;
  const int stop = ctx_.options.level0_stop_writes_trigger;
  while (true) {
    MXFS_RETURN_IF_ERROR(WritableStatus());
    if (shutting_down_) return Status::InvalidArgument("database " + ctx_.dbname + " is closing");
    if (force && mem_->Empty()) return Status::OK();  // nothing to switch out
    const auto current = versions_->current();
    const int l0_runs = level0_->NumRuns(*current);
    if (allow_delay && l0_runs >= slowdown) {
      // Many L0 runs: give compaction a millisecond, once per write.
      const uint64_t start = NowMicros();
      l.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      l.lock();
      stats_.stall_slowdown_us += NowMicros() - start;
      allow_delay = false;
    } else if (const uint64_t pace = allow_delay && !force ? level0_->PaceDelayMicros(Load()) : 0; pace > 0) {
      // An L0 whose flushes may wait (the container) sets the sustainable
      // rate: a writer ahead of it waits now (at most once per write, a
      // millisecond or more at a time: the pacing quantum, container_pacer.h),
      // instead of filling the memtable at once and then waiting for the
      // whole flush (which leaves whole seconds without a write).
      const uint64_t start = NowMicros();
      l.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(pace));
      l.lock();
      stats_.stall_pacing_us += NowMicros() - start;
      stats_.pacing_waits++;
      allow_delay = false;
    } else if (!force && mem_->ApproximateMemoryUsage() <= ctx_.options.write_buffer_size &&
               !(!mem_->Empty() &&
                 (wal_store_->WantsEarlySwitch() || level0_->WantsEarlySwitch(mem_->ApproximateMemoryUsage())))) {
      // (The log or L0 may ask for a switch before the memtable is full:
      // the active memtable's share of a PM WAL full, a memtable too large
      // for one row.)
      return Status::OK();
    } else if (static_cast<int>(imms_.size()) >= ctx_.options.max_write_buffer_number - 1) {
      WaitForFlush(l, std::chrono::milliseconds(0));
    } else if (l0_runs >= stop) {
      const uint64_t start = NowMicros();
      bg_cv_.wait(l);
      stats_.stall_stop_us += NowMicros() - start;
    } else {
      uint64_t number = 0;
      std::unique_ptr<WalWriter> log;
      Status s = NewLog(&l, &number, &log);
      if (!s.ok()) {
        RecordBackgroundError(s, "WAL creation");
        return s;
      }
      std::unique_ptr<WalWriter> old_log = std::move(log_);
      const uint64_t old_number = log_number_;
      log_ = std::move(log);
      log_number_ = number;
      imms_.push_back(std::move(mem_));
      last_switch_us_ = NowMicros();
      mem_ = NewMemTable();
      mem_->set_log_number(number);
      PublishReadView();
      force = false;
      bg_cv_.notify_all();
      // Everything in the old log was written by earlier groups (only the
      // leader writes it, and that is us): close it outside the mutex.
      l.unlock();
      Status cs = old_log->Close();
      l.lock();
      if (!cs.ok()) {
        MXFS_LOG_WARN("closing WAL #%llu: %s", static_cast<unsigned long long>(old_number), cs.ToString().c_str());
      }
    }
  }
}

void DBImpl::WaitForFlush(std::unique_lock<std::mutex>& l, std::chrono::milliseconds at_most) {
  MXFS_ASSERT_HELD(mu_);
  const uint64_t start = NowMicros();
  const uint64_t mark = level0_->RoomWaitMark();
  if (at_most.count() > 0) {
    bg_cv_.wait_for(l, at_most);
  } else {
    bg_cv_.wait(l);
  }
  // A flush waiting for room in L0 (at any time during this wait) is its
  // own stall cause.
  if (level0_->WaitedForRoomSince(mark)) {
    stats_.stall_container_us += NowMicros() - start;
  } else {
    stats_.stall_memtable_us += NowMicros() - start;
  }
}

}  // namespace mxfs
