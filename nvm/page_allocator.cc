#include "nvm/page_allocator.h"

#include <algorithm>
#include <string>

namespace mxfs {

PageAllocator::PageAllocator(uint32_t num_pages) : num_pages_(num_pages), bits_((num_pages + 63) / 64, 0) {}

Status PageAllocator::CheckRange(uint32_t first, uint32_t n, const char* op) const {
  if (n == 0 || uint64_t{first} + n > num_pages_) {
    return Status::Corruption(std::string("page allocator: ") + op + " of pages [" + std::to_string(first) + ", " +
                              std::to_string(uint64_t{first} + n) + ") is outside the container's " +
                              std::to_string(num_pages_) + " pages");
  }
  return Status::OK();
}

void PageAllocator::SetRangeLocked(uint32_t first, uint32_t n, bool used) {
  for (uint32_t p = first; p < first + n; p++) {
    if (used) bits_[p >> 6] |= uint64_t{1} << (p & 63);
    else bits_[p >> 6] &= ~(uint64_t{1} << (p & 63));
  }
  if (used) used_ += n;
  else used_ -= n;
}

uint32_t PageAllocator::FindRunLocked(uint32_t n) const {
  // Two passes: from the cursor to the end, then from 0 to the cursor.
  for (int pass = 0; pass < 2; pass++) {
    uint32_t begin = pass == 0 ? cursor_ : 0;
    uint32_t limit = pass == 0 ? num_pages_ : std::min(num_pages_, cursor_ + n);
    uint32_t run = 0;
    for (uint32_t p = begin; p < limit; p++) {
      if ((p & 63) == 0 && run == 0 && bits_[p >> 6] == ~uint64_t{0}) {
        p += 63;  // a full word: skip it
        continue;
      }
      if (TestLocked(p)) {
        run = 0;
        continue;
      }
      if (++run == n) return p + 1 - n;
    }
  }
  return num_pages_;
}

Result<uint32_t> PageAllocator::Allocate(uint32_t n) {
  std::lock_guard<std::mutex> l(mu_);
  if (n == 0 || n > num_pages_) {
    return Err(Status::InvalidArgument("page allocator: cannot allocate " + std::to_string(n) + " pages of " +
                                       std::to_string(num_pages_)));
  }
  uint32_t first = FindRunLocked(n);
  if (first == num_pages_) {
    return Err(Status::Busy("matrix container full: no run of " + std::to_string(n) + " free pages (" +
                            std::to_string(num_pages_ - used_) + " of " + std::to_string(num_pages_) +
                            " pages free); wait for column compaction"));
  }
  SetRangeLocked(first, n, true);
  cursor_ = (first + n) % num_pages_;
  return first;
}

Result<std::vector<std::pair<uint32_t, uint32_t>>> PageAllocator::AllocateRuns(uint32_t n, uint32_t min_run) {
  std::lock_guard<std::mutex> l(mu_);
  if (n == 0 || n > num_pages_ - used_) {
    return Err(Status::Busy("matrix container full: " + std::to_string(n) + " pages wanted, " +
                            std::to_string(num_pages_ - used_) + " of " + std::to_string(num_pages_) +
                            " pages free; wait for column compaction"));
  }
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  uint32_t first = FindRunLocked(n);
  if (first != num_pages_) {
    SetRangeLocked(first, n, true);
    cursor_ = (first + n) % num_pages_;
    runs.emplace_back(first, n);
    return runs;
  }
  uint32_t missing = n;
  // One sweep over all pages from the cursor, taking free runs in order.
  uint32_t p = cursor_, seen = 0, run_start = 0, run = 0;
  auto take = [&](uint32_t start, uint32_t len) {
    if (len >= min_run || len >= missing) {
      uint32_t t = std::min(len, missing);
      runs.emplace_back(start, t);
      missing -= t;
    }
  };
  while (seen < num_pages_ && missing > 0) {
    if (p == 0 && run > 0) {  // a run does not wrap around the end
      take(run_start, run);
      run = 0;
    }
    if (!TestLocked(p)) {
      if (run == 0) run_start = p;
      run++;
    } else if (run > 0) {
      take(run_start, run);
      run = 0;
    }
    p = p + 1 == num_pages_ ? 0 : p + 1;
    seen++;
  }
  if (missing > 0 && run > 0) take(run_start, run);
  if (missing > 0) {
    return Err(Status::Busy("matrix container full: " + std::to_string(n) + " pages wanted in runs of at least " +
                            std::to_string(min_run) + ", " + std::to_string(num_pages_ - used_) +
                            " pages free but too scattered; wait for column compaction"));
  }
  for (auto [f, c] : runs) SetRangeLocked(f, c, true);
  cursor_ = (runs.back().first + runs.back().second) % num_pages_;
  return runs;
}

Status PageAllocator::Free(uint32_t first, uint32_t n) {
  std::lock_guard<std::mutex> l(mu_);
  MXFS_RETURN_IF_ERROR(CheckRange(first, n, "free"));
  for (uint32_t p = first; p < first + n; p++) {
    if (!TestLocked(p)) {
      return Status::Corruption("page allocator: freeing page " + std::to_string(p) + " which is already free");
    }
  }
  SetRangeLocked(first, n, false);
  return Status::OK();
}

Status PageAllocator::MarkUsed(uint32_t first, uint32_t n) {
  std::lock_guard<std::mutex> l(mu_);
  MXFS_RETURN_IF_ERROR(CheckRange(first, n, "mark-used"));
  for (uint32_t p = first; p < first + n; p++) {
    if (TestLocked(p)) {
      return Status::Corruption("page allocator: page " + std::to_string(p) + " is claimed twice (range [" +
                                std::to_string(first) + ", " + std::to_string(first + n) + "))");
    }
  }
  SetRangeLocked(first, n, true);
  return Status::OK();
}

uint32_t PageAllocator::used_pages() const {
  std::lock_guard<std::mutex> l(mu_);
  return used_;
}

uint32_t PageAllocator::free_pages() const {
  std::lock_guard<std::mutex> l(mu_);
  return num_pages_ - used_;
}

bool PageAllocator::IsUsed(uint32_t page) const {
  std::lock_guard<std::mutex> l(mu_);
  return page < num_pages_ && TestLocked(page);
}

uint32_t PageAllocator::LargestFreeRun() const {
  std::lock_guard<std::mutex> l(mu_);
  uint32_t best = 0, run = 0;
  for (uint32_t p = 0; p < num_pages_; p++) {
    run = TestLocked(p) ? 0 : run + 1;
    if (run > best) best = run;
  }
  return best;
}

}  // namespace mxfs
