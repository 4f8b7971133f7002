#include "kvcore/log_reader.h"

#include <algorithm>
#include <cstdio>

#include "base/coding.h"
#include "base/hash.h"
#include "kvcore/log_writer.h"

namespace mxfs {

Status LogReader::Fill(size_t n) {
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  std::string chunk;
  while (Available() < n && !eof_) {
    // Read in bounded chunks: n comes from a length field that may be
    // corrupt (up to 4 GiB), and the file ends long before that.
    const size_t want = std::clamp<size_t>(n - Available(), 64 * 1024, 1 << 20);
    chunk.resize(want);
    Slice got;
    Status s = file_->Read(want, &got, chunk.data());
    if (!s.ok()) return s;
    if (got.empty()) eof_ = true;
    buf_.append(got.data(), got.size());
  }
  return Status::OK();
}

bool LogReader::ReadRecord(Slice* record, std::string* scratch) {
  if (!status_.ok()) return false;
  Status s = Fill(kLogHeaderSize);
  if (!s.ok()) {
    status_ = s;
    return false;
  }
  if (Available() == 0) return false;  // clean end
  if (Available() < kLogHeaderSize) {  // torn header
    dropped_ += Available();
    pos_ = buf_.size();
    return false;
  }
  const char* h = buf_.data() + pos_;
  const uint32_t expected = DecodeFixed32(h);
  const uint32_t length = DecodeFixed32(h + 4);
  s = Fill(kLogHeaderSize + static_cast<size_t>(length) + 1);
  if (!s.ok()) {
    status_ = s;
    return false;
  }
  if (Available() < kLogHeaderSize + static_cast<size_t>(length)) {  // torn payload
    dropped_ += Available();
    pos_ = buf_.size();
    return false;
  }
  h = buf_.data() + pos_;
  const uint32_t found = Checksum32(h + 4, 4, h + kLogHeaderSize, length);
  if (found != expected) {
    if (Available() == kLogHeaderSize + length) {  // the last record: torn
      dropped_ += Available();
      pos_ = buf_.size();
      return false;
    }
    char msg[128];
    std::snprintf(msg, sizeof(msg), ": record checksum mismatch at offset %llu (expected %08x, found %08x)",
                  static_cast<unsigned long long>(offset_), expected, found);
    status_ = Status::Corruption(file_->path() + msg);
    return false;
  }
  scratch->assign(h + kLogHeaderSize, length);
  *record = Slice(*scratch);
  pos_ += kLogHeaderSize + length;
  offset_ += kLogHeaderSize + length;
  return true;
}

}  // namespace mxfs
