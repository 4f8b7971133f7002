#include "kvcore/arena.h"

#include <sys/mman.h>

#include <cstdint>

namespace mxfs {

ChunkPool::~ChunkPool() {
  for (void* c : kept_) munmap(c, kChunkSize);
}

void* ChunkPool::NewChunk() {
  // Twice the size, then trim to a 2 MiB boundary: mmap promises only
  // page alignment, and a huge page needs its 2 MiB aligned.
  void* m = mmap(nullptr, 2 * kChunkSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(m);
  const uintptr_t aligned = (start + kChunkSize - 1) & ~(uintptr_t{kChunkSize} - 1);
  if (aligned > start) munmap(m, aligned - start);
  if (aligned + kChunkSize < start + 2 * kChunkSize) {
    munmap(reinterpret_cast<void*>(aligned + kChunkSize), start + 2 * kChunkSize - (aligned + kChunkSize));
  }
  void* chunk = reinterpret_cast<void*>(aligned);
  madvise(chunk, kChunkSize, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
  return chunk;
}

void* ChunkPool::Get() {
  {
    std::lock_guard<std::mutex> l(mu_);
    used_++;
    if (!kept_.empty()) {
      void* c = kept_.back();
      kept_.pop_back();
      return c;
    }
  }
  void* c = NewChunk();
  if (c == nullptr) {
    std::lock_guard<std::mutex> l(mu_);
    used_--;
  }
  return c;
}

void ChunkPool::Put(void* chunk) {
  {
    std::lock_guard<std::mutex> l(mu_);
    used_--;
    if (used_ + kept_.size() < max_chunks_) {
      kept_.push_back(chunk);
      return;
    }
  }
  munmap(chunk, kChunkSize);
}

void ChunkPool::Fill() {
  while (true) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (kept_.size() >= fill_chunks_ || used_ + kept_.size() >= max_chunks_) return;
    }
    void* chunk = NewChunk();
    if (chunk == nullptr) return;
#ifdef MADV_POPULATE_WRITE
    if (madvise(chunk, kChunkSize, MADV_POPULATE_WRITE) != 0)
#endif
    {
      // One store per 4 KiB page (a huge page is faulted in by the first).
      for (size_t off = 0; off < kChunkSize; off += 4096) static_cast<volatile char*>(chunk)[off] = 0;
    }
    std::lock_guard<std::mutex> l(mu_);
    if (used_ + kept_.size() >= max_chunks_) {
      munmap(chunk, kChunkSize);  // the arenas took more meanwhile
      return;
    }
    kept_.push_back(chunk);
  }
}

void ChunkPool::Release() {
  std::vector<void*> kept;
  {
    std::lock_guard<std::mutex> l(mu_);
    kept.swap(kept_);
  }
  for (void* c : kept) munmap(c, kChunkSize);
}

size_t ChunkPool::kept_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return kept_.size() * kChunkSize;
}

size_t ChunkPool::used_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return used_ * kChunkSize;
}

char* Arena::Allocate(size_t bytes) {
  if (bytes <= alloc_bytes_remaining_) {
    char* result = alloc_ptr_;
    alloc_ptr_ += bytes;
    alloc_bytes_remaining_ -= bytes;
    return result;
  }
  return AllocateFallback(bytes);
}

char* Arena::AllocateAligned(size_t bytes) {
  constexpr size_t kAlign = alignof(std::max_align_t) > 8 ? alignof(std::max_align_t) : 8;
  size_t mod = reinterpret_cast<uintptr_t>(alloc_ptr_) & (kAlign - 1);
  size_t slop = mod == 0 ? 0 : kAlign - mod;
  size_t needed = bytes + slop;
  if (needed <= alloc_bytes_remaining_) {
    char* result = alloc_ptr_ + slop;
    alloc_ptr_ += needed;
    alloc_bytes_remaining_ -= needed;
    return result;
  }
  // New blocks come from operator new[], which is max_align_t aligned.
  return AllocateFallback(bytes);
}

char* Arena::AllocateFallback(size_t bytes) {
  if (bytes > kBlockSize / 4) {
    // Big: carved out of the chunks (with a pool) or its own block; the
    // current block stays.
    if (pool_ != nullptr && bytes <= kChunkSize / 8) {
      if (char* p = BytesFromChunk(bytes)) return p;
    }
    return AllocateNewBlock(bytes);
  }
  alloc_ptr_ = AllocateNewBlock(kBlockSize);
  alloc_bytes_remaining_ = kBlockSize;
  char* result = alloc_ptr_;
  alloc_ptr_ += bytes;
  alloc_bytes_remaining_ -= bytes;
  return result;
}

Arena::~Arena() {
  for (void* c : chunks_) {
    if (pool_ != nullptr) pool_->Put(c);
    else munmap(c, kChunkSize);
  }
}

bool Arena::NextChunk() {
  void* chunk = pool_ != nullptr ? pool_->Get() : ChunkPool::NewChunk();
  if (chunk == nullptr) return false;
  chunks_.push_back(chunk);
  chunk_ptr_ = static_cast<char*>(chunk);
  chunk_remaining_ = kChunkSize;
  return true;
}

char* Arena::BytesFromChunk(size_t bytes) {
  constexpr size_t kAlign = alignof(std::max_align_t);
  const size_t rounded = (bytes + kAlign - 1) & ~(kAlign - 1);
  if (chunk_remaining_ < rounded && !NextChunk()) return nullptr;
  char* p = chunk_ptr_;
  chunk_ptr_ += rounded;
  chunk_remaining_ -= rounded;
  // Counted as a heap block of its own was: the memtable's size, and so
  // when it is switched, do not change.
  memory_usage_.fetch_add(bytes + sizeof(char*), std::memory_order_relaxed);
  return p;
}

// A block is a carving of its own size: nothing is rounded.
char* Arena::BlockFromChunk() {
  static_assert(kBlockSize % alignof(std::max_align_t) == 0);
  return BytesFromChunk(kBlockSize);
}

char* Arena::AllocateNewBlock(size_t block_bytes) {
  if (huge_chunks_ && block_bytes == kBlockSize) {
    if (char* block = BlockFromChunk()) return block;
  }
  // Not value-initialised: every byte handed out is written by its user
  // before it is read (a zeroed block cost a memset per block, and values
  // above kBlockSize / 4 get a block each: 3% of a 4 KiB fill).
  blocks_.push_back(std::make_unique_for_overwrite<char[]>(block_bytes));
  memory_usage_.fetch_add(block_bytes + sizeof(char*), std::memory_order_relaxed);
  return blocks_.back().get();
}

}  // namespace mxfs
