#include "nvm/pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/coding.h"
#include "base/hash.h"
#include "base/logging.h"
#include "nvm/kill_point.h"

namespace mxfs {

namespace {

constexpr uint32_t kFlagUscRecorded = 1;
constexpr size_t kChecksumOffset = kPoolHeaderSize - 4;
// The last field before the zero padding is the USC at 88..95.
static_assert(kPoolHeaderSize == 128 && 88 + 8 <= kChecksumOffset);
static_assert(2 * kPoolPageSize >= 2 * kPoolHeaderSize, "both header copies fit their pages");
static_assert(sizeof(PoolUuid) == 16);

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

Status Pmem2Error(const std::string& path, const char* what, int rc) {
  return Status::IOError(Fmt("pool %s: %s failed: %s", path.c_str(), what, pmem2_errormsg()),
                         rc < 0 && rc > -4096 ? -rc : 0);  // PMEM2_E_* codes carry no errno
}

enum class HeaderCheck { kOk, kBadMagic, kBadChecksum };

HeaderCheck CheckRaw(const char* p) {
  if (std::memcmp(p, kPoolMagic, sizeof(kPoolMagic)) != 0) return HeaderCheck::kBadMagic;
  if (Checksum32(p, kChecksumOffset) != DecodeFixed32(p + kChecksumOffset)) return HeaderCheck::kBadChecksum;
  return HeaderCheck::kOk;
}

PoolHeader DecodePoolHeader(const char* p) {
  PoolHeader h;
  h.layout_version = DecodeFixed32(p + 8);
  std::memcpy(h.uuid.data(), p + 16, 16);
  h.pool_size = DecodeFixed64(p + 32);
  h.page_size = DecodeFixed32(p + 40);
  uint32_t flags = DecodeFixed32(p + 44);
  h.wal_offset = DecodeFixed64(p + 48);
  h.wal_size = DecodeFixed64(p + 56);
  h.container_offset = DecodeFixed64(p + 64);
  h.container_size = DecodeFixed64(p + 72);
  h.creation_time_ns = DecodeFixed64(p + 80);
  h.unsafe_shutdown_count = DecodeFixed64(p + 88);
  h.usc_recorded = (flags & kFlagUscRecorded) != 0;
  return h;
}

}  // namespace

void EncodePoolHeader(const PoolHeader& h, char (&out)[kPoolHeaderSize]) {
  std::memset(out, 0, kPoolHeaderSize);
  std::memcpy(out, kPoolMagic, sizeof(kPoolMagic));
  EncodeFixed32(out + 8, h.layout_version);
  EncodeFixed32(out + 12, kPoolHeaderSize);
  std::memcpy(out + 16, h.uuid.data(), 16);
  EncodeFixed64(out + 32, h.pool_size);
  EncodeFixed32(out + 40, h.page_size);
  EncodeFixed32(out + 44, h.usc_recorded ? kFlagUscRecorded : 0);
  EncodeFixed64(out + 48, h.wal_offset);
  EncodeFixed64(out + 56, h.wal_size);
  EncodeFixed64(out + 64, h.container_offset);
  EncodeFixed64(out + 72, h.container_size);
  EncodeFixed64(out + 80, h.creation_time_ns);
  EncodeFixed64(out + 88, h.unsafe_shutdown_count);
  EncodeFixed32(out + kChecksumOffset, Checksum32(out, kChecksumOffset));
}

std::string UuidToString(const PoolUuid& u) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return buf;
}

std::optional<PoolUuid> ParsePoolUuid(const std::string& s) {
  if (s.size() != 36) return std::nullopt;
  PoolUuid u{};
  size_t j = 0;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < 36;) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return std::nullopt;
      ++i;
      continue;
    }
    int hi = nibble(s[i]), lo = nibble(s[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    u[j++] = static_cast<uint8_t>(hi * 16 + lo);
    i += 2;
  }
  return u;
}

Result<uint64_t> DevDaxSize(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT) return Err(Status::NotFound(Fmt("pool %s: no such file or device", path.c_str())));
    return Err(Status::FromErrno("stat pool " + path, e));
  }
  if (S_ISREG(st.st_mode)) return uint64_t{0};
  const std::string not_dax = path + " is not a devdax device or regular file";
  if (!S_ISCHR(st.st_mode)) return Err(Status::InvalidArgument(not_dax));
  // A devdax device's sysfs node belongs to the "dax" subsystem.
  const std::string sys = Fmt("/sys/dev/char/%u:%u", major(st.st_rdev), minor(st.st_rdev));
  char link[4096];
  ssize_t n = ::readlink((sys + "/subsystem").c_str(), link, sizeof(link) - 1);
  if (n <= 0) return Err(Status::InvalidArgument(not_dax + " (" + sys + "/subsystem: no such link)"));
  link[n] = '\0';
  const char* base = std::strrchr(link, '/');
  if (std::strcmp(base != nullptr ? base + 1 : link, "dax") != 0) {
    return Err(Status::InvalidArgument(not_dax + " (its subsystem is " + link + ", not dax)"));
  }
  std::ifstream in(sys + "/size");
  uint64_t size = 0;
  if (!(in >> size) || size == 0) {
    return Err(Status::IOError(Fmt("devdax device %s: cannot read its size from %s/size", path.c_str(), sys.c_str())));
  }
  return size;
}

Pool::~Pool() = default;

const char* Pool::GranularityName() const {
  switch (granularity_) {
    case PMEM2_GRANULARITY_BYTE: return "byte";
    case PMEM2_GRANULARITY_CACHE_LINE: return "cache-line";
    case PMEM2_GRANULARITY_PAGE: return "page";
  }
  return "unknown";
}

void Pool::PublishWord(uint64_t* word, uint64_t v) const {
  // An aligned 8-byte store is atomic on x86-64; a torn commit is impossible.
  std::atomic_ref<uint64_t>(*word).store(v, std::memory_order_release);
  persist_(word, sizeof(*word));
}

Result<std::unique_ptr<Pool>> Pool::Map(const std::string& path, UniqueFd fd, bool copy_on_write) {
  std::unique_ptr<Pool> pool(new Pool());  // private constructor; owned at once
  pool->path_ = path;
  pool->fd_ = std::move(fd);

  pmem2_config* cfg = nullptr;
  int rc = pmem2_config_new(&cfg);
  if (rc != 0) return Err(Pmem2Error(path, "pmem2_config_new", rc));
  std::unique_ptr<pmem2_config, void (*)(pmem2_config*)> cfg_owner(cfg, [](pmem2_config* c) { pmem2_config_delete(&c); });
  pmem2_source* src = nullptr;
  rc = pmem2_source_from_fd(&src, pool->fd_.get());
  if (rc != 0) return Err(Pmem2Error(path, "pmem2_source_from_fd", rc));
  std::unique_ptr<pmem2_source, void (*)(pmem2_source*)> src_owner(src, [](pmem2_source* s) { pmem2_source_delete(&s); });
  // The coarsest granularity we can work with: we flush explicitly anyway.
  rc = pmem2_config_set_required_store_granularity(cfg, PMEM2_GRANULARITY_PAGE);
  if (rc != 0) return Err(Pmem2Error(path, "pmem2_config_set_required_store_granularity", rc));
  if (copy_on_write) {
    rc = pmem2_config_set_sharing(cfg, PMEM2_PRIVATE);
    if (rc != 0) return Err(Pmem2Error(path, "pmem2_config_set_sharing", rc));
  }
  pmem2_map* map = nullptr;
  rc = pmem2_map_new(&map, cfg, src);
  if (rc != 0) return Err(Pmem2Error(path, "pmem2_map_new", rc));
  pool->map_.reset(map);
  pool->base_ = static_cast<char*>(pmem2_map_get_address(map));
  pool->size_ = pmem2_map_get_size(map);
  pool->granularity_ = pmem2_map_get_store_granularity(map);
  pool->persist_ = pmem2_get_persist_fn(map);
  pool->flush_ = pmem2_get_flush_fn(map);
  pool->drain_ = pmem2_get_drain_fn(map);
  pool->memcpy_ = pmem2_get_memcpy_fn(map);
  pool->memset_ = pmem2_get_memset_fn(map);

  uint64_t usc = 0;
  rc = pmem2_source_device_usc(src, &usc);
  // On /dev/shm and most files this is PMEM2_E_NOSUPP: record "none".
  if (rc == 0) pool->device_usc_ = usc;
  pool->header_.usc_recorded = (rc == 0);
  pool->header_.unsafe_shutdown_count = rc == 0 ? usc : 0;
  return pool;
}

void Pool::Populate() const {
  // In 64 MiB steps: a fatal signal between steps stops it early (one call
  // over a huge pool would run to its end first).
  constexpr uint64_t kStep = 64ull << 20;
  uint64_t off = 0;
  while (off < size_) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kStep, size_ - off));
    if (::madvise(base_ + off, n, MADV_POPULATE_WRITE) != 0) {
      int e = errno;
      if (e == EINTR) continue;  // a signal arrived: redo this step (pages done stay done)
      // EINVAL: a kernel before 5.14 or a mapping that cannot be populated
      // (a devdax device, VM_PFNMAP); EFAULT/ENOMEM: no memory for a page.
      // The pool still works: its pages are then faulted on first store.
      MXFS_LOG_INFO("pool %s: pages not populated (madvise MADV_POPULATE_WRITE at offset %" PRIu64
                    ": %s); they are faulted in on first use",
                    path_.c_str(), off, std::strerror(e));
      return;
    }
    off += n;
  }
}

Result<std::unique_ptr<Pool>> Pool::Create(const std::string& path, const PoolCreateOptions& o) {
  const uint64_t ps = kPoolPageSize;
  if (o.size % ps != 0 || o.wal_size % ps != 0 || o.container_size % ps != 0) {
    return Err(Status::InvalidArgument(Fmt("pool %s: size %" PRIu64 ", WAL size %" PRIu64 " and container size %" PRIu64
                                           " must be multiples of the page size %" PRIu64,
                                           path.c_str(), o.size, o.wal_size, o.container_size, ps)));
  }
  const uint64_t wal_offset = 2 * ps;
  const uint64_t container_offset = wal_offset + o.wal_size;
  const uint64_t min_container = 16 * ps;
  uint64_t needed = container_offset + (o.container_size ? o.container_size : min_container);
  if (o.size < needed) {
    return Err(Status::InvalidArgument(Fmt("pool %s too small for the requested geometry: the geometry needs %" PRIu64
                                           " bytes (2 header pages + %" PRIu64 " WAL + %" PRIu64
                                           " container), the pool size is %" PRIu64 " bytes",
                                           path.c_str(), needed, o.wal_size,
                                           o.container_size ? o.container_size : min_container, o.size)));
  }
  struct stat st{};
  const bool device = ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  uint64_t size = o.size;
  UniqueFd fd;
  if (device) {
    // A devdax device is used as it is: no create, no truncate.
    auto dev = DevDaxSize(path);
    if (!dev) return Err(dev.error());
    if (size == 0 || size > *dev) size = *dev - *dev % ps;
    if (size < needed) {
      return Err(Status::InvalidArgument(Fmt("devdax device %s: %" PRIu64 " bytes, the geometry needs %" PRIu64,
                                             path.c_str(), size, needed)));
    }
    fd.reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd.valid()) return Err(Status::FromErrno("open devdax device " + path, errno));
  } else {
    int flags = O_RDWR | O_CREAT | O_CLOEXEC | (o.overwrite ? O_TRUNC : O_EXCL);
    fd.reset(::open(path.c_str(), flags, 0600));
    if (!fd.valid()) return Err(Status::FromErrno("create pool " + path, errno));
    if (::ftruncate(fd.get(), static_cast<off_t>(o.size)) != 0) {
      int e = errno;
      ::unlink(path.c_str());
      return Err(Status::FromErrno(Fmt("pool %s: set size to %" PRIu64, path.c_str(), o.size), e));
    }
    // Every block now (zeroed pages on tmpfs), so that a pool too big for
    // its filesystem fails here, not with SIGBUS at a later first store.
    // posix_fallocate returns the error (it does not set errno); a
    // filesystem that cannot preallocate (EOPNOTSUPP) keeps a sparse file.
    int e = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(o.size));
    if (e != 0 && e != EOPNOTSUPP && e != EINVAL) {
      ::unlink(path.c_str());
      return Err(Status::FromErrno(
          Fmt("pool %s: cannot allocate its %" PRIu64 " bytes on its filesystem", path.c_str(), o.size), e));
    }
  }
  auto pool = Map(path, std::move(fd), false);
  if (!pool) return pool;
  Pool& p = **pool;
  if (o.populate) p.Populate();
  PoolHeader& h = p.header_;
  h.layout_version = kPoolLayoutVersion;
  h.uuid = o.uuid;
  h.pool_size = size;
  h.page_size = kPoolPageSize;
  h.wal_offset = wal_offset;
  h.wal_size = o.wal_size;
  h.container_offset = container_offset;
  h.container_size = o.container_size ? o.container_size : size - container_offset;
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  h.creation_time_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);

  char raw[kPoolHeaderSize];
  EncodePoolHeader(h, raw);
  // The file may be a reused DAX device: clear both header pages first.
  p.ZeroNoDrain(p.base_, 2 * ps);
  p.Drain();
  p.CopyNoDrain(p.base_, std::span<const char>(raw));
  p.Drain();
  MXFS_KILL_POINT("pool.between_headers");
  p.CopyNoDrain(p.base_ + ps, std::span<const char>(raw));
  p.Drain();
  return pool;
}

Result<std::unique_ptr<Pool>> Pool::Open(const std::string& path, const PoolOpenOptions& o) {
  UniqueFd fd(::open(path.c_str(), (o.read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC));
  if (!fd.valid()) {
    int e = errno;
    if (e == ENOENT) return Err(Status::NotFound(Fmt("pool %s: no such file", path.c_str())));
    return Err(Status::FromErrno("open pool " + path, e));
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return Err(Status::FromErrno("stat pool " + path, errno));
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) < 2 * kPoolPageSize) {
    return Err(Status::InvalidArgument(Fmt("pool %s is not a MatrixFS pool: %" PRIu64
                                           " bytes is less than its two header pages",
                                           path.c_str(), static_cast<uint64_t>(st.st_size))));
  }
  auto pool = Map(path, std::move(fd), o.read_only);
  if (!pool) return pool;
  Pool& p = **pool;
  if (o.populate && !o.read_only) p.Populate();
  const char* primary = p.base_;
  const char* backup = p.base_ + kPoolPageSize;
  HeaderCheck c1 = CheckRaw(primary);
  HeaderCheck c2 = CheckRaw(backup);
  const char* good = nullptr;
  if (c1 == HeaderCheck::kOk) {
    good = primary;
  } else if (c2 == HeaderCheck::kOk) {
    good = backup;
  } else if (c1 == HeaderCheck::kBadMagic && c2 == HeaderCheck::kBadMagic) {
    return Err(Status::InvalidArgument(Fmt("pool %s is not a MatrixFS pool: bad magic at offset 0 (expected \"MXFSPOOL\")",
                                           path.c_str())));
  } else {
    return Err(Status::Corruption(Fmt("pool %s: header checksum mismatch in both copies (offsets 0 and %u): "
                                      "primary stored 0x%08x computed 0x%08x",
                                      path.c_str(), kPoolPageSize, DecodeFixed32(primary + kChecksumOffset),
                                      Checksum32(primary, kChecksumOffset))));
  }
  PoolHeader h = DecodePoolHeader(good);
  if (h.layout_version != kPoolLayoutVersion) {
    return Err(Status::NotSupported(Fmt("pool %s: wrong layout version: expected %u, found %u", path.c_str(),
                                        kPoolLayoutVersion, h.layout_version)));
  }
  if (o.expected_uuid && *o.expected_uuid != h.uuid) {
    return Err(Status::InvalidArgument(Fmt("pool %s belongs to another filesystem: foreign UUID %s, expected %s",
                                           path.c_str(), UuidToString(h.uuid).c_str(),
                                           UuidToString(*o.expected_uuid).c_str())));
  }
  if (h.page_size != kPoolPageSize) {
    return Err(Status::NotSupported(
        Fmt("pool %s: page size %u, this build supports %u", path.c_str(), h.page_size, kPoolPageSize)));
  }
  if (h.pool_size > p.size_) {
    return Err(Status::Corruption(Fmt("pool %s too small for its geometry: the header says %" PRIu64
                                      " bytes, the file maps %" PRIu64 " bytes",
                                      path.c_str(), h.pool_size, p.size_)));
  }
  // Overflow-safe: every term is checked against pool_size before it is added.
  const uint64_t ps = kPoolPageSize;
  bool geometry_ok = h.wal_offset >= 2 * ps && h.wal_offset <= h.pool_size && h.wal_size <= h.pool_size - h.wal_offset &&
                     h.container_offset >= h.wal_offset + h.wal_size && h.container_offset <= h.pool_size &&
                     h.container_size <= h.pool_size - h.container_offset && h.wal_offset % ps == 0 &&
                     h.wal_size % ps == 0 && h.container_offset % ps == 0 && h.container_size % ps == 0;
  if (!geometry_ok) {
    return Err(Status::Corruption(Fmt("pool %s: inconsistent geometry in the header: pool %" PRIu64 " bytes, WAL at %" PRIu64
                                      "+%" PRIu64 ", container at %" PRIu64 "+%" PRIu64
                                      " (regions must be page aligned, in order and inside the pool)",
                                      path.c_str(), h.pool_size, h.wal_offset, h.wal_size, h.container_offset,
                                      h.container_size)));
  }
  if (good != primary || c2 != HeaderCheck::kOk) {
    // One copy is torn or damaged: rewrite it from the good one (into the
    // private copy only, when read-only).
    char* bad = good == primary ? p.base_ + kPoolPageSize : p.base_;
    p.CopyNoDrain(bad, std::span<const char>(good, kPoolHeaderSize));
    p.Drain();
    p.repaired_header_ = true;
  }
  if (!o.read_only && h.usc_recorded && p.device_usc_ && *p.device_usc_ != h.unsafe_shutdown_count) {
    // The device lost power without flushing its caches since the count was
    // recorded: the last writes before that may be torn. Say so, then record
    // the new count (primary, then backup) so it is reported once.
    p.unsafe_shutdown_detected_ = true;
    MXFS_LOG_WARN("pool %s: unsafe shutdown detected (device count %" PRIu64 ", recorded %" PRIu64 ")", path.c_str(),
                  *p.device_usc_, h.unsafe_shutdown_count);
    h.unsafe_shutdown_count = *p.device_usc_;
    char raw[kPoolHeaderSize];
    EncodePoolHeader(h, raw);
    p.CopyNoDrain(p.base_, std::span<const char>(raw));
    p.Drain();
    p.CopyNoDrain(p.base_ + kPoolPageSize, std::span<const char>(raw));
    p.Drain();
  }
  p.header_ = h;
  return pool;
}

}  // namespace mxfs
