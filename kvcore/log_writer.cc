#include "kvcore/log_writer.h"

#include "base/coding.h"
#include "base/hash.h"

namespace mxfs {

LogWriter::~LogWriter() {
  if (file_) file_->Close().IgnoreError();  // best effort; Close() reports errors to callers who care
}

Status LogWriter::AddRecord(const Slice& record, bool sync) {
  if (!file_) return Status::InvalidArgument("log writer is closed");
  if (record.size() > kLogMaxRecord) {
    return Status::InvalidArgument("log record of " + std::to_string(record.size()) + " bytes exceeds the " +
                                   std::to_string(kLogMaxRecord) + "-byte limit");
  }
  char header[kLogHeaderSize];
  EncodeFixed32(header + 4, static_cast<uint32_t>(record.size()));
  EncodeFixed32(header, Checksum32(header + 4, 4, record.data(), record.size()));
  MXFS_RETURN_IF_ERROR(file_->Append(Slice(header, kLogHeaderSize)));
  MXFS_RETURN_IF_ERROR(file_->Append(record));
  MXFS_RETURN_IF_ERROR(file_->Flush());
  if (sync) MXFS_RETURN_IF_ERROR(file_->Sync());
  return Status::OK();
}

Status LogWriter::Sync() {
  if (!file_) return Status::InvalidArgument("log writer is closed");
  MXFS_RETURN_IF_ERROR(file_->Flush());
  return file_->Sync();
}

Status LogWriter::Close() {
  if (!file_) return Status::OK();
  Status s = file_->Close();
  file_.reset();
  return s;
}

}  // namespace mxfs
