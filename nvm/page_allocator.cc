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

Result<uint32_t> PageAllocator::Allocate(uint32_t n) {
  std::lock_guard<std::mutex> l(mu_);
  if (n == 0 || n > num_pages_) {
    return Err(Status::InvalidArgument("page allocator: cannot allocate " + std::to_string(n) + " pages of " +
                                       std::to_string(num_pages_)));
  }
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
      if (++run == n) {
        uint32_t first = p + 1 - n;
        SetRangeLocked(first, n, true);
        cursor_ = (first + n) % num_pages_;
        return first;
      }
    }
  }
  return Err(Status::Busy("matrix container full: no run of " + std::to_string(n) + " free pages (" +
                          std::to_string(num_pages_ - used_) + " of " + std::to_string(num_pages_) +
                          " pages free); wait for column compaction"));
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
