// PageAllocator: which pages of the matrix container's data area are in use.
// A bitmap sized from the real page count (an 8 GiB container of 4 KiB pages
// has 2^21 pages). Allocations are contiguous runs, first fit from a
// rotating cursor; a RowTable takes one run when it can and otherwise a few
// (AllocateRuns), so the holes column compaction leaves are reused.
//
// The state is not persisted: it is rebuilt at open from the rows the
// container root lists (MarkUsed for each row's live pages), so it can never
// disagree with the rows after a crash.
//
// Thread-safety: thread-safe (one internal mutex; no syscalls under it).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "base/status.h"

namespace mxfs {

class PageAllocator {
 public:
  explicit PageAllocator(uint32_t num_pages);
  PageAllocator(const PageAllocator&) = delete;
  PageAllocator& operator=(const PageAllocator&) = delete;

  // First page of a free run of n pages, marked used. Busy when no run of n
  // free pages exists (the container is full: wait for column compaction).
  Result<uint32_t> Allocate(uint32_t n);
  // n pages as few runs as possible, each at least min_run pages long
  // (except that a run may be exactly what is still missing): one run if a
  // free run of n exists, otherwise the free runs met first-fit from the
  // cursor. All or nothing: Busy, and nothing taken, if they do not add up.
  Result<std::vector<std::pair<uint32_t, uint32_t>>> AllocateRuns(uint32_t n, uint32_t min_run);
  // Returns [first, first+n) to the free set. Freeing a free page is a bug:
  // it returns Corruption and changes nothing.
  [[nodiscard]] Status Free(uint32_t first, uint32_t n);
  // Recovery: marks [first, first+n) used. Corruption if any page is
  // already used (two rows claim it) or the range is out of bounds.
  [[nodiscard]] Status MarkUsed(uint32_t first, uint32_t n);

  uint32_t num_pages() const { return num_pages_; }
  uint32_t used_pages() const;
  uint32_t free_pages() const;
  bool IsUsed(uint32_t page) const;
  // Longest run of free pages (the largest row that fits now).
  uint32_t LargestFreeRun() const;

 private:
  bool TestLocked(uint32_t p) const { return (bits_[p >> 6] >> (p & 63)) & 1; }
  void SetRangeLocked(uint32_t first, uint32_t n, bool used);
  // First fit of a free run of n pages from the cursor; n_pages_ if none.
  uint32_t FindRunLocked(uint32_t n) const;
  Status CheckRange(uint32_t first, uint32_t n, const char* op) const;

  const uint32_t num_pages_;
  mutable std::mutex mu_;
  std::vector<uint64_t> bits_;  // guarded by mu_; 1 = used
  uint32_t used_ = 0;           // guarded by mu_
  uint32_t cursor_ = 0;         // guarded by mu_; where the next search starts
};

}  // namespace mxfs
