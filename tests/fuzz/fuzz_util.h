// Helpers shared by the libFuzzer targets in tests/fuzz/, the seed-corpus
// generator (make_corpus.cc) and the regression tests that replay crashing
// inputs through the normal g++ build. Header-only, so the clang fuzz build
// and the g++ build each compile it with their own flags.
//
// Input conventions (every target):
//   byte 0      flags. Bit 0 (kFixChecksums): before the reader sees the
//               bytes, recompute the checksums the format has, so that the
//               fuzzer reaches the code behind them instead of stopping at
//               the first checksum mismatch. Other bits are per target.
//   bytes 1..   the payload: the on-media bytes, or for the pool-backed
//               targets a sparse image (below).
//
// Sparse image (pool, PM WAL and matrix container targets, whose regions are
// hundreds of KiB of mostly zeros): a sequence of runs, each
//   u32 LE offset into the region, u16 LE length, then length bytes,
// written over a zeroed region in order. A run past the region's end is
// clipped; a short final run takes what is there.
//
// Thread-safety: everything here is used by one thread at a time.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/coding.h"
#include "base/iterator.h"
#include "base/slice.h"
#include "base/status.h"
#include "ssd/file_system.h"

namespace mxfs::fuzz {

inline constexpr uint8_t kFixChecksums = 1;

// An invariant of the code under test (not of the input) was broken, e.g.
// a record that decodes does not survive encode and decode: abort, so the
// fuzzer reports it as a crash.
inline void FuzzCheck(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

// Keeps the first error.
inline void Note(Status* first, Status s) {
  if (first->ok() && !s.ok()) *first = std::move(s);
}

// Walks an iterator both ways and seeks to what it saw; returns its status.
inline Status ExerciseIterator(Iterator* it, std::vector<std::string>* keys, size_t max_keys = 64) {
  Status first;
  size_t n = 0;
  for (it->SeekToFirst(); it->Valid() && n < 100000; it->Next(), n++) {
    if (keys->size() < max_keys) keys->push_back(it->key().ToString());
    (void)it->value().size();
  }
  Note(&first, it->status());
  n = 0;
  for (it->SeekToLast(); it->Valid() && n < 100000; it->Prev(), n++) {
    (void)it->key().size();
  }
  Note(&first, it->status());
  for (const std::string& k : *keys) {
    it->Seek(k);
    if (it->Valid()) {
      it->Next();
      if (it->Valid()) it->Prev();
    }
    Note(&first, it->status());
  }
  it->Seek("");
  it->Seek(std::string(8, '\xff'));
  Note(&first, it->status());
  return first;
}

// A read-only file over bytes kept in memory (no file descriptors, nothing
// to clean up). Read at or past the end returns a short or empty result,
// like a regular file.
class StringRandomAccessFile final : public RandomAccessFile {
 public:
  StringRandomAccessFile(std::string data, std::string path) : data_(std::move(data)), path_(std::move(path)) {}
  Status Read(uint64_t offset, size_t n, Slice* result, char* scratch) const override {
    if (offset >= data_.size()) {
      *result = Slice(scratch, 0);
      return Status::OK();
    }
    size_t k = std::min<uint64_t>(n, data_.size() - offset);
    std::memcpy(scratch, data_.data() + offset, k);
    *result = Slice(scratch, k);
    return Status::OK();
  }
  Result<uint64_t> Size() const override { return data_.size(); }
  const std::string& path() const override { return path_; }

 private:
  std::string data_;
  std::string path_;
};

class StringSequentialFile final : public SequentialFile {
 public:
  StringSequentialFile(std::string data, std::string path) : data_(std::move(data)), path_(std::move(path)) {}
  Status Read(size_t n, Slice* result, char* scratch) override {
    size_t k = std::min(n, data_.size() - pos_);
    std::memcpy(scratch, data_.data() + pos_, k);
    pos_ += k;
    *result = Slice(scratch, k);
    return Status::OK();
  }
  Status Skip(uint64_t n) override {
    pos_ += std::min<uint64_t>(n, data_.size() - pos_);
    return Status::OK();
  }
  const std::string& path() const override { return path_; }

 private:
  std::string data_;
  size_t pos_ = 0;
  std::string path_;
};

// Writes the sparse image in [p, p+n) over region (which the caller zeroed).
inline void ApplySparseImage(const uint8_t* p, size_t n, char* region, uint64_t region_size) {
  while (n >= 6) {
    uint64_t off = DecodeFixed32(reinterpret_cast<const char*>(p));
    size_t len = static_cast<uint8_t>(p[4]) | (size_t{p[5]} << 8);
    p += 6;
    n -= 6;
    len = std::min(len, n);
    if (off < region_size) std::memcpy(region + off, p, std::min<uint64_t>(len, region_size - off));
    p += len;
    n -= len;
  }
}

// The inverse, for the corpus generator: the non-zero parts of region as
// runs (zero gaps shorter than 16 bytes stay inside a run).
inline std::string MakeSparseImage(const char* region, uint64_t region_size) {
  std::string out;
  uint64_t i = 0;
  while (i < region_size) {
    if (region[i] == 0) {
      i++;
      continue;
    }
    uint64_t end = i, zeros = 0;
    for (uint64_t j = i; j < region_size && j - i < 0xffff; j++) {
      if (region[j] != 0) {
        end = j + 1;
        zeros = 0;
      } else if (++zeros >= 16) {
        break;
      }
    }
    PutFixed32(&out, static_cast<uint32_t>(i));
    out.push_back(static_cast<char>((end - i) & 0xff));
    out.push_back(static_cast<char>((end - i) >> 8));
    out.append(region + i, end - i);
    i = end;
  }
  return out;
}

// A scratch file that never outlives the process: created under dir,
// unlinked at once, and reachable by name through /proc/self/fd while the
// descriptor is open (Pool::Open takes a path).
class AnonymousFile {
 public:
  explicit AnonymousFile(const std::string& dir) {
    std::string tmpl = dir + "/mxfs-fuzz-XXXXXX";
    fd_ = ::mkstemp(tmpl.data());
    if (fd_ >= 0) ::unlink(tmpl.c_str());
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~AnonymousFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  AnonymousFile(const AnonymousFile&) = delete;
  AnonymousFile& operator=(const AnonymousFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Replaces the contents with data.
  bool Write(const std::string& data) {
    if (::ftruncate(fd_, 0) != 0) return false;
    size_t done = 0;
    while (done < data.size()) {
      ssize_t w = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(done));
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
    }
    return true;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

// For the replay tests (g++ build): tests/fuzz/ located from the test
// source's path (__FILE__ is relative to the repository root, where the
// tests run), and the files of one corpus or regression set, sorted by name.
inline std::string FuzzDir(const char* test_file) {
  return (std::filesystem::path(test_file).parent_path().parent_path() / "fuzz").string();
}

// Files in dir whose names start with prefix ("" for all), as (name, bytes).
inline std::vector<std::pair<std::string, std::string>> ReadInputs(const std::string& dir,
                                                                   const std::string& prefix = "") {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.compare(0, prefix.size(), prefix) != 0) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out.emplace_back(name, ss.str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

}  // namespace mxfs::fuzz
