// Pool: a file (a DAX device, a file on a DAX filesystem, or a file on
// /dev/shm) mapped as persistent memory through PMDK libpmem2, plus the
// persist primitives every structure in nvm/ uses.
//
// Layout of a pool (every offset is a multiple of the page size, 4096):
//   page 0            primary pool header (PoolHeader, 128 bytes used)
//   page 1            backup copy of the header, written after the primary
//   [wal_offset, +wal_size)              the PM write-ahead log (PmWal)
//   [container_offset, +container_size)  the matrix container
// The header format is specified byte by byte in man/matrixfs.5, section
// "POOL, WAL AND ROWTABLE FORMAT", and in EncodePoolHeader below.
//
// The header is written once, at Create: primary first, persisted, then the
// backup, persisted. Open accepts the primary if its checksum holds and falls
// back to the backup otherwise (a torn write of one copy is survivable) and
// rewrites the bad copy from the good one.
//
// Persist protocol (STYLE.md): write the payload (CopyNoDrain, or stores and
// Flush), Drain once, then publish it with PublishWord on an aligned 8-byte
// commit word. The helpers take typed spans or typed references so that
// persisting a pointer variable instead of the data it points to does not
// compile.
//
// Thread-safety: after Create/Open a Pool is immutable; its persist helpers
// may be called from any thread on disjoint ranges.
#pragma once

#include <libpmem2.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "base/slice.h"
#include "base/status.h"
#include "base/unique_fd.h"

namespace mxfs {

using PoolUuid = std::array<uint8_t, 16>;

inline constexpr uint32_t kPoolPageSize = 4096;
inline constexpr uint32_t kPoolLayoutVersion = 1;
inline constexpr char kPoolMagic[8] = {'M', 'X', 'F', 'S', 'P', 'O', 'O', 'L'};

// The decoded pool header (the media form is EncodePoolHeader's output).
struct PoolHeader {
  uint32_t layout_version = kPoolLayoutVersion;
  PoolUuid uuid{};
  uint64_t pool_size = 0;
  uint32_t page_size = kPoolPageSize;
  uint64_t wal_offset = 0;
  uint64_t wal_size = 0;
  uint64_t container_offset = 0;
  uint64_t container_size = 0;
  uint64_t creation_time_ns = 0;  // CLOCK_REALTIME at Create
  bool usc_recorded = false;      // false: the device reports no unsafe-shutdown count
  uint64_t unsafe_shutdown_count = 0;
};

// Media form of the header: 128 bytes, little-endian.
//   0  magic "MXFSPOOL"      8  u32 layout version   12 u32 header size (128)
//   16 uuid[16]              32 u64 pool size        40 u32 page size
//   44 u32 flags (bit 0: USC recorded)               48 u64 WAL offset
//   56 u64 WAL size          64 u64 container offset 72 u64 container size
//   80 u64 creation time ns  88 u64 unsafe shutdown count
//   96..123 zero             124 u32 Checksum32 of bytes 0..123
inline constexpr size_t kPoolHeaderSize = 128;
void EncodePoolHeader(const PoolHeader& h, char (&out)[kPoolHeaderSize]);

struct PoolCreateOptions {
  uint64_t size = 64ull << 20;  // whole pool, bytes (multiple of the page size)
  PoolUuid uuid{};              // shared with the SSD side's superblock
  uint64_t wal_size = 8ull << 20;
  uint64_t container_size = 0;  // 0: everything after the WAL
  bool overwrite = false;       // false: fail if path exists
  // Prefault the mapping for writing (see PoolOpenOptions::populate).
  bool populate = false;
};

struct PoolOpenOptions {
  std::optional<PoolUuid> expected_uuid;  // if set, a pool with another UUID is refused
  // Maps the pool copy-on-write from a read-only descriptor: the structures
  // open and recover as usual, but nothing they store ever reaches the file
  // or device (fsck -n, DB read-only opens). A damaged header copy is then
  // reported (repaired_header) but not rewritten.
  bool read_only = false;
  // Prefault the whole mapping for writing at open (MADV_POPULATE_WRITE,
  // Linux >= 5.14): every page is allocated and its page-table entry made
  // writable now, so the first store to a page in the write path is not a
  // page fault (on tmpfs: a fault that also allocates and zeroes the page,
  // 75-90 ms more per 64 MiB flush into a fresh pool). Costs time at open
  // (0.3-1.5 s per GiB on our 2-core VM, see BENCHMARKS.md) and makes the pool
  // resident at once. Best effort: where the kernel or the device refuses
  // (an older kernel, a devdax device that maps on demand) the pool is
  // used as it is. Ignored with read_only (it would copy every page).
  bool populate = false;
};

// Pools may live on a devdax character device (/dev/daxX.Y), used as is:
// Create neither creates nor truncates it, the size comes from the device.
// For a path that exists: its usable size if it is a devdax device (from
// sysfs, /sys/dev/char/MAJ:MIN/size, as libpmem2 reads it), NotFound if it
// does not exist, 0 for a regular file (size chosen by the caller), and
// InvalidArgument "PATH is not a devdax device or regular file" for anything
// else (/dev/null, a block device, a directory).
Result<uint64_t> DevDaxSize(const std::string& path);

// Anything persist helpers accept by reference: a trivially copyable object
// that is neither a pointer nor a span (spans go to the span overload).
template <typename T>
concept PersistableObject = std::is_trivially_copyable_v<std::remove_cvref_t<T>> &&
                            !std::is_pointer_v<std::remove_cvref_t<T>> &&
                            !std::is_array_v<std::remove_cvref_t<T>>;

class Pool {
 public:
  // Creates (mode 0600) and maps a new pool at path; writes both headers.
  // A regular file gets all its blocks at once (posix_fallocate): a pool
  // that does not fit its filesystem fails here with ENOSPC instead of
  // SIGBUS at some later first store (a sparse file on a full tmpfs).
  // On a devdax device (DevDaxSize > 0) the device is used as it is: the
  // pool is options.size bytes of it (0 or more than the device: all of it).
  static Result<std::unique_ptr<Pool>> Create(const std::string& path, const PoolCreateOptions& options);
  // Maps an existing pool and validates its header.
  static Result<std::unique_ptr<Pool>> Open(const std::string& path, const PoolOpenOptions& options = {});

  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  const std::string& path() const { return path_; }
  const PoolHeader& header() const { return header_; }
  char* base() const { return base_; }
  uint64_t size() const { return size_; }
  // The store granularity libpmem2 granted (PAGE on tmpfs, CACHE_LINE when
  // PMEM2_FORCE_GRANULARITY=CACHE_LINE or on a DAX device without eADR).
  pmem2_granularity granularity() const { return granularity_; }
  const char* GranularityName() const;
  // The device's unsafe-shutdown count now, if it has one (compare with
  // header().unsafe_shutdown_count to detect an unsafe shutdown).
  std::optional<uint64_t> device_usc() const { return device_usc_; }
  // True if Open found the device's unsafe-shutdown count changed since it
  // was recorded (the header now holds the new count).
  bool unsafe_shutdown_detected() const { return unsafe_shutdown_detected_; }
  // True if the primary header was bad and was rebuilt from the backup at Open.
  bool repaired_header() const { return repaired_header_; }

  // Address of a pool offset / offset of a pool address.
  char* At(uint64_t offset) const { return base_ + offset; }
  uint64_t OffsetOf(const void* p) const { return static_cast<const char*>(p) - base_; }

  // Flush + drain.
  template <typename T, size_t E>
  void Persist(std::span<T, E> s) const { persist_(s.data(), s.size_bytes()); }
  template <PersistableObject T>
  void Persist(const T& obj) const { persist_(&obj, sizeof(T)); }
  template <typename T, size_t E>
  void Flush(std::span<T, E> s) const { flush_(s.data(), s.size_bytes()); }
  template <PersistableObject T>
  void Flush(const T& obj) const { flush_(&obj, sizeof(T)); }
  void Drain() const { drain_(); }

  // Copies src to dst in PM with non-temporal stores and no drain: call
  // Drain() once after the last copy.
  void CopyNoDrain(char* dst, std::span<const char> src) const {
    memcpy_(dst, src.data(), src.size(), PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN);
  }
  void CopyNoDrain(char* dst, const Slice& src) const { CopyNoDrain(dst, std::span<const char>(src.data(), src.size())); }
  // Copies src to dst with plain stores: nothing is flushed, call Flush
  // on a range covering it, then Drain. Several stores then one Flush cost
  // one msync on a page-granularity pool (not DAX), where every
  // CopyNoDrain is an msync of its own.
  static void Store(char* dst, const Slice& src) {
    if (!src.empty()) std::memcpy(dst, src.data(), src.size());
  }
  // Zeroes [dst, dst+n) with no drain.
  void ZeroNoDrain(char* dst, size_t n) const { memset_(dst, 0, n, PMEM2_F_MEM_NONTEMPORAL | PMEM2_F_MEM_NODRAIN); }

  // The commit: stores v into the aligned 8-byte word and persists it.
  void PublishWord(uint64_t* word, uint64_t v) const;
  static uint64_t LoadWord(const uint64_t* word) {
    return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(word)).load(std::memory_order_acquire);
  }

 private:
  struct MapDeleter {
    void operator()(pmem2_map* m) const { pmem2_map_delete(&m); }
  };
  Pool() = default;
  static Result<std::unique_ptr<Pool>> Map(const std::string& path, UniqueFd fd, bool copy_on_write);
  // MADV_POPULATE_WRITE over the mapping; best effort (logs why not).
  void Populate() const;

  std::string path_;
  UniqueFd fd_;
  std::unique_ptr<pmem2_map, MapDeleter> map_;
  char* base_ = nullptr;
  uint64_t size_ = 0;
  pmem2_granularity granularity_ = PMEM2_GRANULARITY_PAGE;
  pmem2_persist_fn persist_ = nullptr;
  pmem2_flush_fn flush_ = nullptr;
  pmem2_drain_fn drain_ = nullptr;
  pmem2_memcpy_fn memcpy_ = nullptr;
  pmem2_memset_fn memset_ = nullptr;
  PoolHeader header_;
  bool repaired_header_ = false;
  std::optional<uint64_t> device_usc_;
  bool unsafe_shutdown_detected_ = false;
};

// "0123abcd-...": the UUID in the usual 8-4-4-4-12 form.
std::string UuidToString(const PoolUuid& u);
// The inverse (hex digits in either case); nullopt if s is not that form.
std::optional<PoolUuid> ParsePoolUuid(const std::string& s);

}  // namespace mxfs
