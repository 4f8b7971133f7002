// The parts of file_system.h that do not depend on a backend: default
// MultiRead/GetFreeSpace/GetStats and the whole-file helpers.
#include "ssd/file_system.h"

#include <sys/statvfs.h>

#include <cerrno>

namespace mxfs {

Status RandomAccessFile::MultiRead(ReadRequest* reqs, size_t n) const {
  Status first;
  for (size_t i = 0; i < n; i++) {
    reqs[i].status = Read(reqs[i].offset, reqs[i].len, &reqs[i].result, reqs[i].scratch);
    if (!reqs[i].status.ok() && first.ok()) first = reqs[i].status;
  }
  return first;
}

Status FileSystem::GetFreeSpace(const std::string& path, uint64_t* free_bytes, uint64_t* total_bytes) {
  struct statvfs sv;
  if (::statvfs(path.c_str(), &sv) != 0) return Status::FromErrno("statvfs " + path, errno);
  *free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
  *total_bytes = static_cast<uint64_t>(sv.f_blocks) * sv.f_frsize;
  return Status::OK();
}

FileSystemStats FileSystem::GetStats() const { return FileSystemStats{}; }

namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Status WriteFileAtomic(FileSystem* fs, const std::string& path, const Slice& data) {
  const std::string tmp = path + ".tmp";
  Status s;
  {
    auto file = fs->NewWritableFile(tmp);
    if (!file) return file.error();
    s = (*file)->Append(data);
    if (s.ok()) s = (*file)->Sync();
    if (s.ok()) s = (*file)->Close();
  }
  if (s.ok()) s = fs->RenameFile(tmp, path);
  if (!s.ok()) {
    fs->RemoveFile(tmp).IgnoreError();  // best effort: the temporary is garbage either way
    return s;
  }
  return fs->SyncDir(DirName(path));
}

Result<std::string> ReadFileToString(FileSystem* fs, const std::string& path) {
  auto file = fs->NewSequentialFile(path);
  if (!file) return Err(file.error());
  std::string out;
  constexpr size_t kChunk = 64 * 1024;
  std::string scratch(kChunk, '\0');
  for (;;) {
    Slice got;
    Status s = (*file)->Read(kChunk, &got, scratch.data());
    if (!s.ok()) return Err(std::move(s));
    if (got.empty()) break;
    out.append(got.data(), got.size());
  }
  return out;
}

}  // namespace mxfs
