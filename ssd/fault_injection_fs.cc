#include "ssd/fault_injection_fs.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

namespace mxfs {

const char* FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kOpen: return "open";
    case FaultOp::kRead: return "read";
    case FaultOp::kWrite: return "write";
    case FaultOp::kSync: return "sync";
    case FaultOp::kRename: return "rename";
    case FaultOp::kRemove: return "remove";
    case FaultOp::kCreateDir: return "mkdir";
  }
  return "unknown";
}

std::string FaultSpec::ToString() const {
  std::string out = FaultOpName(op);
  if (err == 0) out += ":delay";
  else if (err == EIO) out += ":eio";
  else if (err == ENOSPC) out += ":enospc";
  else if (err == EFBIG) out += ":efbig";
  else out += ":errno" + std::to_string(err);
  out += ":after=" + std::to_string(after);
  if (!path.empty()) out += ":path=" + path;
  if (one_shot) out += ":oneshot";
  if (err == 0) out += ":ms=" + std::to_string(delay_ms);
  return out;
}

namespace {

bool ParseCount(const std::string& s, uint64_t* out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) return false;
  *out = std::strtoull(s.c_str(), nullptr, 10);
  return true;
}

Result<FaultSpec> ParseOneFaultSpec(const std::string& rule) {
  auto bad = [&](const std::string& why) {
    return Err(Status::InvalidArgument("fault rule \"" + rule + "\": " + why +
                                       " (expected OP:eio|enospc|efbig|delay[:after=N][:path=SUBSTR][:oneshot][:ms=N])"));
  };
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t colon = rule.find(':', start);
    fields.push_back(rule.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (fields.size() < 2) return bad("needs at least OP:ERR");
  FaultSpec spec;
  bool found = false;
  for (int i = 0; i < kNumFaultOps; i++) {
    if (fields[0] == FaultOpName(static_cast<FaultOp>(i))) {
      spec.op = static_cast<FaultOp>(i);
      found = true;
    }
  }
  if (!found) return bad("unknown operation \"" + fields[0] + "\"");
  if (fields[1] == "eio") spec.err = EIO;
  else if (fields[1] == "enospc") spec.err = ENOSPC;
  else if (fields[1] == "efbig") spec.err = EFBIG;
  else if (fields[1] == "delay") {
    spec.err = 0;
    spec.delay_ms = 100;
  } else return bad("unknown error \"" + fields[1] + "\"");
  for (size_t i = 2; i < fields.size(); i++) {
    const std::string& f = fields[i];
    if (f == "oneshot") {
      spec.one_shot = true;
    } else if (f.starts_with("after=")) {
      if (!ParseCount(f.substr(6), &spec.after)) return bad("bad count in \"" + f + "\"");
    } else if (f.starts_with("path=")) {
      spec.path = f.substr(5);
      if (spec.path.empty()) return bad("empty path filter");
    } else if (f.starts_with("ms=")) {
      uint64_t ms = 0;
      if (!ParseCount(f.substr(3), &ms) || ms > 60000) return bad("bad delay in \"" + f + "\" (at most 60000)");
      if (spec.err != 0) return bad("ms= applies to delay rules only");
      spec.delay_ms = static_cast<uint32_t>(ms);
    } else {
      return bad("unknown field \"" + f + "\"");
    }
  }
  return spec;
}

}  // namespace

Result<std::vector<FaultSpec>> ParseFaultSpecs(const std::string& text) {
  std::vector<FaultSpec> out;
  std::string rule;
  for (size_t i = 0; i <= text.size(); i++) {
    const char c = i < text.size() ? text[i] : ';';
    if (c == ';' || c == '\n' || c == ' ' || c == '\t' || c == '\r') {
      if (!rule.empty()) {
        auto spec = ParseOneFaultSpec(rule);
        if (!spec) return Err(spec.error());
        out.push_back(std::move(*spec));
      }
      rule.clear();
    } else {
      rule.push_back(c);
    }
  }
  return out;
}

namespace {

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string NormalizeDir(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

struct FaultInjectionFileSystem::FileState {
  uint64_t synced_size = 0;
  struct Undo {
    uint64_t offset;
    std::string bytes;  // what was there before an unsynced change
  };
  std::vector<Undo> undo;  // oldest first
};

struct FaultInjectionFileSystem::Shared {
  struct Fault {
    FaultSpec spec;
    uint64_t remaining = 0;
    bool armed = true;
  };
  struct DirOp {
    enum class Kind { kCreate, kRemove, kRename } kind;
    std::string dir;   // the directory whose SyncDir makes it durable
    std::string path;  // created/removed file, or rename target
    std::string from;  // rename source
    bool had_old = false;
    std::string old_contents;  // removed file, or the file a rename replaced
  };

  explicit Shared(bool track) : tracking(track) {}

  const bool tracking;  // false: error-only mode, no crash state
  mutable std::mutex mu;
  bool active = true;
  uint64_t epoch = 0;
  std::vector<Fault> faults;
  uint64_t injected = 0;
  std::map<std::string, std::shared_ptr<FileState>> files;
  std::vector<DirOp> dir_ops;  // oldest first

  // epoch: the caller's epoch for file handles (writes from handles opened
  // before a DropUnsyncedData fail), or UINT64_MAX for filesystem calls.
  // path: the file the operation is on (what the rules' substrings match).
  Status Check(FaultOp op, const std::string& path, const std::string& what, bool mutating,
               uint64_t handle_epoch = UINT64_MAX) {
    uint32_t delay_ms = 0;
    int err = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (mutating && handle_epoch != UINT64_MAX && handle_epoch != epoch) {
        return Status::IOError(what + ": file handle opened before a simulated crash", EIO);
      }
      if (mutating && !active) return Status::IOError(what + ": filesystem inactive (simulated crash)", EIO);
      for (Fault& f : faults) {
        if (!f.armed || f.spec.op != op) continue;
        if (!f.spec.path.empty() && path.find(f.spec.path) == std::string::npos) continue;
        if (f.remaining > 0) {
          f.remaining--;
          continue;
        }
        if (f.spec.err == 0) {
          delay_ms = std::max(delay_ms, f.spec.delay_ms);
        } else if (err == 0) {
          err = f.spec.err;
          injected++;
        }
        if (f.spec.one_shot) f.armed = false;
      }
    }
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (err == 0) return Status::OK();
    return Status::FromErrno("injected " + std::string(FaultOpName(op)) + " fault: " + what, err);
  }

  // Adds f, replacing a rule for the same op and path substring.
  void AddFault(const FaultSpec& spec) {
    std::lock_guard<std::mutex> lock(mu);
    std::erase_if(faults, [&](const Fault& f) { return f.spec.op == spec.op && f.spec.path == spec.path; });
    faults.push_back(Fault{spec, spec.after, true});
  }

  std::shared_ptr<FileState> Track(const std::string& path, uint64_t synced_size, bool keep_existing) {
    if (!tracking) return std::make_shared<FileState>();
    std::lock_guard<std::mutex> lock(mu);
    auto& slot = files[path];
    if (!slot || !keep_existing) {
      slot = std::make_shared<FileState>();
      slot->synced_size = synced_size;
    }
    return slot;
  }

  // True if a handle of this epoch may still write (no crash since, active).
  bool Alive(uint64_t handle_epoch) const {
    std::lock_guard<std::mutex> lock(mu);
    return active && handle_epoch == epoch;
  }

  uint64_t Epoch() const {
    std::lock_guard<std::mutex> lock(mu);
    return epoch;
  }
};

namespace {

using Shared = FaultInjectionFileSystem::Shared;
using FileState = FaultInjectionFileSystem::FileState;

class FaultSequentialFile final : public SequentialFile {
 public:
  FaultSequentialFile(std::unique_ptr<SequentialFile> t, std::shared_ptr<Shared> sh)
      : target_(std::move(t)), shared_(std::move(sh)) {}
  Status Read(size_t n, Slice* result, char* scratch) override {
    MXFS_RETURN_IF_ERROR(shared_->Check(FaultOp::kRead, path(), "read " + path(), false));
    return target_->Read(n, result, scratch);
  }
  Status Skip(uint64_t n) override { return target_->Skip(n); }
  const std::string& path() const override { return target_->path(); }

 private:
  std::unique_ptr<SequentialFile> target_;
  std::shared_ptr<Shared> shared_;
};

class FaultRandomAccessFile final : public RandomAccessFile {
 public:
  FaultRandomAccessFile(std::unique_ptr<RandomAccessFile> t, std::shared_ptr<Shared> sh)
      : target_(std::move(t)), shared_(std::move(sh)) {}
  Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
    MXFS_RETURN_IF_ERROR(
        shared_->Check(FaultOp::kRead, path(), "read " + path() + " at offset " + std::to_string(offset), false));
    return target_->Read(offset, n, result, scratch);
  }
  Status MultiRead(ReadRequest* reqs, size_t n) const override {
    Status s = shared_->Check(FaultOp::kRead, path(), "read batch of " + std::to_string(n) + " from " + path(), false);
    if (!s.ok()) {
      for (size_t i = 0; i < n; i++) {
        reqs[i].status = s;
        reqs[i].result = Slice();
      }
      return s;
    }
    return target_->MultiRead(reqs, n);
  }
  Result<uint64_t> Size() const override { return target_->Size(); }
  const std::string& path() const override { return target_->path(); }

 private:
  std::unique_ptr<RandomAccessFile> target_;
  std::shared_ptr<Shared> shared_;
};

// Buffers appends itself and hands them to the target only on Flush/Sync/
// Close (target flushed at once), so the target never holds data that a
// simulated crash should have lost.
class FaultWritableFile final : public WritableFile {
 public:
  static constexpr size_t kBufferSize = 64 * 1024;

  FaultWritableFile(std::unique_ptr<WritableFile> t, std::shared_ptr<Shared> sh, std::shared_ptr<FileState> st,
                    uint64_t epoch)
      : target_(std::move(t)), shared_(std::move(sh)), state_(std::move(st)), epoch_(epoch) {}
  ~FaultWritableFile() override {
    if (closed_) return;
    if (!shared_->Alive(epoch_)) buf_.clear();  // the simulated crash took it
    Close().IgnoreError();  // destructors cannot report; like fclose
  }

  Status Append(const Slice& data) override {
    MXFS_RETURN_IF_ERROR(shared_->Check(FaultOp::kWrite, path(), "append to " + path(), true, epoch_));
    if (!shared_->tracking) return target_->Append(data);
    buf_.append(data.data(), data.size());
    if (buf_.size() >= kBufferSize) return Push();
    return Status::OK();
  }
  Status Flush() override {
    if (!shared_->tracking) return target_->Flush();  // the Appends were the checked writes
    if (buf_.empty()) return Status::OK();
    MXFS_RETURN_IF_ERROR(shared_->Check(FaultOp::kWrite, path(), "flush " + path(), true, epoch_));
    return Push();
  }
  Status Sync() override {
    MXFS_RETURN_IF_ERROR(shared_->Check(FaultOp::kSync, path(), "sync " + path(), true, epoch_));
    MXFS_RETURN_IF_ERROR(Push());
    MXFS_RETURN_IF_ERROR(target_->Sync());
    if (!shared_->tracking) return Status::OK();
    const uint64_t size = target_->Size();
    std::lock_guard<std::mutex> lock(shared_->mu);
    state_->synced_size = size;
    return Status::OK();
  }
  Status Close() override {
    if (closed_) return Status::OK();
    closed_ = true;
    Status s;
    if (!buf_.empty()) {
      s = shared_->Check(FaultOp::kWrite, path(), "close " + path(), true, epoch_);
      if (s.ok()) s = Push();
      buf_.clear();
    }
    Status c = target_->Close();
    return s.ok() ? c : s;
  }
  uint64_t Size() const override { return target_->Size() + buf_.size(); }
  const std::string& path() const override { return target_->path(); }

 private:
  Status Push() {
    if (buf_.empty()) return Status::OK();
    Status s = target_->Append(buf_);
    if (s.ok()) s = target_->Flush();
    buf_.clear();
    return s;
  }

  std::unique_ptr<WritableFile> target_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<FileState> state_;
  const uint64_t epoch_;
  std::string buf_;
  bool closed_ = false;
};

class FaultRandomRWFile final : public RandomRWFile {
 public:
  FaultRandomRWFile(std::unique_ptr<RandomRWFile> t, std::shared_ptr<Shared> sh, std::shared_ptr<FileState> st,
                    uint64_t epoch)
      : target_(std::move(t)), shared_(std::move(sh)), state_(std::move(st)), epoch_(epoch) {}

  Status Write(uint64_t offset, const Slice& data) override {
    MXFS_RETURN_IF_ERROR(
        shared_->Check(FaultOp::kWrite, path(), "write " + path() + " at offset " + std::to_string(offset), true, epoch_));
    MXFS_RETURN_IF_ERROR(SaveUndo(offset, data.size()));
    return target_->Write(offset, data);
  }
  Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
    MXFS_RETURN_IF_ERROR(
        shared_->Check(FaultOp::kRead, path(), "read " + path() + " at offset " + std::to_string(offset), false));
    return target_->Read(offset, n, result, scratch);
  }
  Status Sync() override {
    MXFS_RETURN_IF_ERROR(shared_->Check(FaultOp::kSync, path(), "sync " + path(), true, epoch_));
    MXFS_RETURN_IF_ERROR(target_->Sync());
    if (!shared_->tracking) return Status::OK();
    auto size = target_->Size();
    if (!size) return size.error();
    std::lock_guard<std::mutex> lock(shared_->mu);
    state_->synced_size = *size;
    state_->undo.clear();
    return Status::OK();
  }
  Status Truncate(uint64_t size) override {
    MXFS_RETURN_IF_ERROR(
        shared_->Check(FaultOp::kWrite, path(), "truncate " + path() + " to " + std::to_string(size), true, epoch_));
    MXFS_RETURN_IF_ERROR(SaveUndo(size, UINT64_MAX));
    return target_->Truncate(size);
  }
  Status Allocate(int mode, uint64_t offset, uint64_t len) override {
    MXFS_RETURN_IF_ERROR(
        shared_->Check(FaultOp::kWrite, path(), "fallocate " + path() + " at offset " + std::to_string(offset), true, epoch_));
    if (mode & FALLOC_FL_PUNCH_HOLE) MXFS_RETURN_IF_ERROR(SaveUndo(offset, len));
    return target_->Allocate(mode, offset, len);
  }
  Result<uint64_t> Size() const override { return target_->Size(); }
  int fd() const override { return target_->fd(); }
  const std::string& path() const override { return target_->path(); }

 private:
  // Keeps the synced bytes in [offset, offset+len) that a change is about to
  // overwrite, so DropUnsyncedData can put them back.
  Status SaveUndo(uint64_t offset, uint64_t len) {
    if (!shared_->tracking) return Status::OK();
    uint64_t synced;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      synced = state_->synced_size;
    }
    if (offset >= synced || len == 0) return Status::OK();
    const uint64_t end = len > synced - offset ? synced : offset + len;
    std::string old(static_cast<size_t>(end - offset), '\0');
    Slice got;
    MXFS_RETURN_IF_ERROR(target_->Read(offset, old.size(), &got, old.data()));
    old.assign(got.data(), got.size());
    std::lock_guard<std::mutex> lock(shared_->mu);
    state_->undo.push_back(FileState::Undo{offset, std::move(old)});
    return Status::OK();
  }

  std::unique_ptr<RandomRWFile> target_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<FileState> state_;
  const uint64_t epoch_;
};

}  // namespace

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem* target, bool track_unsynced)
    : target_(target), shared_(std::make_shared<Shared>(track_unsynced)) {}

FaultInjectionFileSystem::~FaultInjectionFileSystem() = default;

Status FaultInjectionFileSystem::Check(FaultOp op, const std::string& path, const std::string& what, bool mutating) {
  return shared_->Check(op, path, what, mutating);
}

Result<std::unique_ptr<SequentialFile>> FaultInjectionFileSystem::NewSequentialFile(const std::string& path) {
  if (Status s = Check(FaultOp::kOpen, path, "open " + path, false); !s.ok()) return Err(std::move(s));
  auto f = target_->NewSequentialFile(path);
  if (!f) return Err(f.error());
  return std::make_unique<FaultSequentialFile>(std::move(*f), shared_);
}

Result<std::unique_ptr<RandomAccessFile>> FaultInjectionFileSystem::NewRandomAccessFile(const std::string& path,
                                                                                        const FileOptions& opts) {
  if (Status s = Check(FaultOp::kOpen, path, "open " + path, false); !s.ok()) return Err(std::move(s));
  auto f = target_->NewRandomAccessFile(path, opts);
  if (!f) return Err(f.error());
  return std::make_unique<FaultRandomAccessFile>(std::move(*f), shared_);
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewWritableFile(const std::string& path,
                                                                                const FileOptions& opts) {
  if (Status s = Check(FaultOp::kOpen, path, "create " + path, true); !s.ok()) return Err(std::move(s));
  const bool existed = shared_->tracking && target_->FileExists(path);
  auto f = target_->NewWritableFile(path, opts);
  if (!f) return Err(f.error());
  auto state = shared_->Track(path, 0, /*keep_existing=*/false);
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!existed && shared_->tracking) shared_->dir_ops.push_back({Shared::DirOp::Kind::kCreate, DirOf(path), path, "", false, ""});
    epoch = shared_->epoch;
  }
  return std::make_unique<FaultWritableFile>(std::move(*f), shared_, std::move(state), epoch);
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewAppendableFile(const std::string& path) {
  if (Status s = Check(FaultOp::kOpen, path, "open for append " + path, true); !s.ok()) return Err(std::move(s));
  const bool existed = shared_->tracking && target_->FileExists(path);
  auto f = target_->NewAppendableFile(path);
  if (!f) return Err(f.error());
  auto state = shared_->Track(path, (*f)->Size(), /*keep_existing=*/true);
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!existed && shared_->tracking) shared_->dir_ops.push_back({Shared::DirOp::Kind::kCreate, DirOf(path), path, "", false, ""});
    epoch = shared_->epoch;
  }
  return std::make_unique<FaultWritableFile>(std::move(*f), shared_, std::move(state), epoch);
}

Result<std::unique_ptr<RandomRWFile>> FaultInjectionFileSystem::NewRandomRWFile(const std::string& path, bool create,
                                                                                const FileOptions& opts) {
  if (Status s = Check(FaultOp::kOpen, path, (create ? "create " : "open ") + path, create); !s.ok())
    return Err(std::move(s));
  const bool existed = shared_->tracking && target_->FileExists(path);
  auto f = target_->NewRandomRWFile(path, create, opts);
  if (!f) return Err(f.error());
  auto size = (*f)->Size();
  if (!size) return Err(size.error());
  auto state = shared_->Track(path, *size, /*keep_existing=*/true);
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!existed && shared_->tracking) shared_->dir_ops.push_back({Shared::DirOp::Kind::kCreate, DirOf(path), path, "", false, ""});
    epoch = shared_->epoch;
  }
  return std::make_unique<FaultRandomRWFile>(std::move(*f), shared_, std::move(state), epoch);
}

bool FaultInjectionFileSystem::FileExists(const std::string& path) { return target_->FileExists(path); }

Result<std::vector<std::string>> FaultInjectionFileSystem::GetChildren(const std::string& dir) {
  return target_->GetChildren(dir);
}

Result<std::string> FaultInjectionFileSystem::SyncedContents(const std::string& path) {
  auto data = ReadFileToString(target_, path);
  if (!data) return data;
  std::lock_guard<std::mutex> lock(shared_->mu);
  auto it = shared_->files.find(path);
  if (it != shared_->files.end()) {
    const FileState& st = *it->second;
    for (auto u = st.undo.rbegin(); u != st.undo.rend(); ++u) {
      if (data->size() < u->offset + u->bytes.size()) data->resize(u->offset + u->bytes.size(), '\0');
      data->replace(u->offset, u->bytes.size(), u->bytes);
    }
    data->resize(static_cast<size_t>(st.synced_size), '\0');
  }
  return data;
}

Status FaultInjectionFileSystem::RemoveFile(const std::string& path) {
  MXFS_RETURN_IF_ERROR(Check(FaultOp::kRemove, path, "remove " + path, true));
  if (!shared_->tracking) return target_->RemoveFile(path);
  auto contents = SyncedContents(path);
  MXFS_RETURN_IF_ERROR(target_->RemoveFile(path));
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->files.erase(path);
  shared_->dir_ops.push_back({Shared::DirOp::Kind::kRemove, DirOf(path), path, "", contents.has_value(),
                              contents ? std::move(*contents) : std::string()});
  return Status::OK();
}

Status FaultInjectionFileSystem::RenameFile(const std::string& from, const std::string& to) {
  MXFS_RETURN_IF_ERROR(Check(FaultOp::kRename, to, "rename " + from + " to " + to, true));
  if (!shared_->tracking) return target_->RenameFile(from, to);
  std::string old;
  const bool had_old = target_->FileExists(to);
  if (had_old) {
    auto contents = SyncedContents(to);
    if (!contents) return contents.error();
    old = std::move(*contents);
  }
  MXFS_RETURN_IF_ERROR(target_->RenameFile(from, to));
  std::lock_guard<std::mutex> lock(shared_->mu);
  auto it = shared_->files.find(from);
  if (it != shared_->files.end()) {
    shared_->files[to] = std::move(it->second);
    shared_->files.erase(from);
  } else {
    shared_->files.erase(to);
  }
  shared_->dir_ops.push_back({Shared::DirOp::Kind::kRename, DirOf(to), to, from, had_old, std::move(old)});
  return Status::OK();
}

Status FaultInjectionFileSystem::CreateDir(const std::string& path) {
  MXFS_RETURN_IF_ERROR(Check(FaultOp::kCreateDir, path, "mkdir " + path, true));
  return target_->CreateDir(path);
}

Status FaultInjectionFileSystem::SyncDir(const std::string& path) {
  MXFS_RETURN_IF_ERROR(Check(FaultOp::kSync, path, "sync directory " + path, true));
  MXFS_RETURN_IF_ERROR(target_->SyncDir(path));
  if (!shared_->tracking) return Status::OK();
  const std::string dir = NormalizeDir(path);
  std::lock_guard<std::mutex> lock(shared_->mu);
  std::erase_if(shared_->dir_ops, [&](const Shared::DirOp& op) { return op.dir == dir; });
  return Status::OK();
}

Result<uint64_t> FaultInjectionFileSystem::GetFileSize(const std::string& path) { return target_->GetFileSize(path); }

Result<std::unique_ptr<FileLock>> FaultInjectionFileSystem::LockFile(const std::string& path) {
  if (Status s = Check(FaultOp::kOpen, path, "lock " + path, false); !s.ok()) return Err(std::move(s));
  return target_->LockFile(path);
}

Status FaultInjectionFileSystem::GetFreeSpace(const std::string& path, uint64_t* free_bytes, uint64_t* total_bytes) {
  return target_->GetFreeSpace(path, free_bytes, total_bytes);
}

FileSystemStats FaultInjectionFileSystem::GetStats() const { return target_->GetStats(); }

Status FaultInjectionFileSystem::WriteWhole(const std::string& path, const std::string& data) {
  auto f = target_->NewWritableFile(path);
  if (!f) return f.error();
  MXFS_RETURN_IF_ERROR((*f)->Append(data));
  MXFS_RETURN_IF_ERROR((*f)->Sync());
  return (*f)->Close();
}

Status FaultInjectionFileSystem::DropUnsyncedData() {
  if (!shared_->tracking) {
    return Status::NotSupported("DropUnsyncedData: this FaultInjectionFileSystem keeps no crash state");
  }
  std::map<std::string, std::shared_ptr<FileState>> files;
  std::vector<Shared::DirOp> dir_ops;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    files.swap(shared_->files);
    dir_ops.swap(shared_->dir_ops);
    shared_->epoch++;  // handles opened before now stop writing
  }
  std::set<std::string> touched_dirs;
  // 1. Cut every file back to what its last sync covered.
  for (const auto& [path, state] : files) {
    if (!target_->FileExists(path)) continue;
    std::vector<FileState::Undo> undo;
    uint64_t synced;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      undo = state->undo;
      synced = state->synced_size;
    }
    auto size = target_->GetFileSize(path);
    if (!size) return size.error().WithContext("drop unsynced data");
    if (*size == synced && undo.empty()) continue;
    auto rw = target_->NewRandomRWFile(path, false);
    if (!rw) return rw.error().WithContext("drop unsynced data");
    for (auto u = undo.rbegin(); u != undo.rend(); ++u) MXFS_RETURN_IF_ERROR((*rw)->Write(u->offset, u->bytes));
    MXFS_RETURN_IF_ERROR((*rw)->Truncate(synced));
    MXFS_RETURN_IF_ERROR((*rw)->Sync());
  }
  // 2. Undo directory changes no SyncDir covered, newest first.
  for (auto op = dir_ops.rbegin(); op != dir_ops.rend(); ++op) {
    touched_dirs.insert(op->dir);
    switch (op->kind) {
      case Shared::DirOp::Kind::kCreate:
        if (target_->FileExists(op->path)) MXFS_RETURN_IF_ERROR(target_->RemoveFile(op->path));
        break;
      case Shared::DirOp::Kind::kRemove:
        if (op->had_old) MXFS_RETURN_IF_ERROR(WriteWhole(op->path, op->old_contents));
        break;
      case Shared::DirOp::Kind::kRename:
        if (target_->FileExists(op->path)) MXFS_RETURN_IF_ERROR(target_->RenameFile(op->path, op->from));
        if (op->had_old) MXFS_RETURN_IF_ERROR(WriteWhole(op->path, op->old_contents));
        touched_dirs.insert(DirOf(op->from));
        break;
    }
  }
  for (const auto& dir : touched_dirs) {
    if (Status s = target_->SyncDir(dir); !s.ok() && !s.IsNotFound()) return s;
  }
  return Status::OK();
}

void FaultInjectionFileSystem::ResetState() {
  std::vector<std::pair<std::string, std::shared_ptr<FileState>>> files;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    files.assign(shared_->files.begin(), shared_->files.end());
    shared_->dir_ops.clear();
  }
  for (auto& [path, state] : files) {
    auto size = target_->GetFileSize(path);
    std::lock_guard<std::mutex> lock(shared_->mu);
    state->synced_size = size ? *size : 0;
    state->undo.clear();
  }
}

size_t FaultInjectionFileSystem::NumUnsyncedDirEntries() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->dir_ops.size();
}

void FaultInjectionFileSystem::SetFilesystemActive(bool active) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->active = active;
}

bool FaultInjectionFileSystem::IsFilesystemActive() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->active;
}

void FaultInjectionFileSystem::FailAfter(FaultOp op, uint64_t successes, int err, bool one_shot) {
  FailAfterMatching(op, successes, err, one_shot, "");
}

void FaultInjectionFileSystem::FailAfterMatching(FaultOp op, uint64_t successes, int err, bool one_shot,
                                                 const std::string& path_substr) {
  FaultSpec spec;
  spec.op = op;
  spec.err = err;
  spec.after = successes;
  spec.one_shot = one_shot;
  spec.path = path_substr;
  shared_->AddFault(spec);
}

void FaultInjectionFileSystem::Arm(const FaultSpec& spec) { shared_->AddFault(spec); }

Status FaultInjectionFileSystem::ArmFromSpec(const std::string& text) {
  auto specs = ParseFaultSpecs(text);
  if (!specs) return specs.error();
  ClearFaults();
  for (const FaultSpec& spec : *specs) shared_->AddFault(spec);
  return Status::OK();
}

std::string FaultInjectionFileSystem::DescribeFaults() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  std::string out;
  for (const auto& f : shared_->faults) {
    if (!f.armed) continue;
    FaultSpec now = f.spec;
    now.after = f.remaining;
    out += now.ToString() + "\n";
  }
  return out;
}

void FaultInjectionFileSystem::ClearFaults() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->faults.clear();
}

uint64_t FaultInjectionFileSystem::InjectedFaults() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->injected;
}

}  // namespace mxfs
