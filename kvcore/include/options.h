// Options for opening a MatrixKV database, and per-call read/write options.
//
// Thread-safety: plain structs; copied by DB::Open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mxfs {

class FileSystem;
class Snapshot;

struct Options {
  // Open: create the directory and an empty database if there is none.
  bool create_if_missing = true;
  // Open: fail if a database already exists at the path.
  bool error_if_exists = false;

  // DRAM memtable size before it is flushed.
  size_t write_buffer_size = 64ull << 20;
  // Memtables (active + immutable) before writers wait for a flush.
  int max_write_buffer_number = 2;
  // A bloom filter of each memtable's keys of this fraction of
  // write_buffer_size (0: none; at most 0.25), as RocksDB's
  // memtable_bloom_size_ratio with memtable_whole_key_filtering: a Get of a
  // key a memtable does not hold skips its skiplist search (kvcore/memtable.h).
  double memtable_bloom_size_ratio = 0;

  // Leveled tree: target size of the first SSD level and the growth factor.
  // With a matrix container, L1's target is the container's size instead.
  uint64_t max_bytes_for_level_base = 256ull << 20;
  double max_bytes_for_level_multiplier = 10.0;
  uint64_t target_file_size_base = 64ull << 20;
  int num_levels = 7;
  // L0 (SSTables on SSD, used when no NVM pool is configured).
  int level0_file_num_compaction_trigger = 4;
  int level0_slowdown_writes_trigger = 20;
  int level0_stop_writes_trigger = 36;
  int max_background_compactions = 1;

  // SSTables.
  int bloom_bits_per_key = 10;
  size_t block_size = 4096;
  size_t block_cache_size = 64ull << 20;
  // Tables keep their data blocks of blob indexes (every entry a pointer
  // into a blob file, or a deletion) outside the block cache once read,
  // up to this many bytes in all (0: none), as a table keeps its index
  // block: such blocks are the index of the separated values (about 30
  // bytes per value of at least min_blob_size). Other data blocks go
  // through the block cache.
  size_t pinned_blob_index_bytes = 64ull << 20;
  bool use_direct_io = false;  // O_DIRECT for table reads, flush and compaction
  bool use_io_uring = true;    // false forces the pread/pwrite fallback
  // Reads of SSTables and blob files copy out of a read-only mapping of the
  // file instead of calling pread (FileOptions::mmap_reads): no system call
  // for a page in the page cache. An I/O error still comes back as a Status
  // (ssd/mapped_copy.h). Ignored with use_direct_io.
  bool mmap_reads = true;

  // Key-value separation (kvcore/blob_store.h). A compaction writes a value
  // of at least min_blob_size bytes into a blob file once and keeps a small
  // index in the SSTables, so later compactions do not rewrite it. 0 turns
  // separation off. Blob files end at blob_file_size; a compaction moves the
  // live values out of a blob file once this share of it is garbage.
  uint64_t min_blob_size = 2048;
  uint64_t blob_file_size = 128ull << 20;
  double blob_gc_garbage_ratio = 0.5;
  // A blob file at that ratio also makes the tables that point into it due
  // for a compaction of their own (background, and at the end of
  // CompactRange), so that it is collected where no size compaction goes.
  bool blob_gc_compactions = true;  // off only to measure what they buy

  // Persistent memory. Empty nvm_path: L0 is SSTables on SSD and the WAL is a
  // file in the database directory. Otherwise the WAL and the matrix
  // container (L0) live in this pool (a devdax device, a file on a DAX
  // filesystem, or a file on /dev/shm), created with nvm_size if missing.
  std::string nvm_path;
  uint64_t nvm_size = 0;
  double container_share = 0.6;  // receiver's share before it becomes the compactor
  // The receiver also becomes the compactor at this many rows (0: no
  // limit), or at 2 rows or more once this share of its entries are
  // deletions (0: never): every read pays for every row (ContainerOptions).
  uint32_t container_max_receiver_rows = 8;
  double container_tombstone_share = 0.5;
  int column_compaction_threads = 1;
  // Close to a full container, writers keep to column compaction's drain
  // rate instead of running into the full container (kvcore/container_pacer.h).
  // Off by default: measured, it did not remove the empty seconds (column
  // compaction itself stalls) and raised the write P99.9 3-4x (BENCHMARKS.md).
  bool pace_writers_to_container = false;
  // Directory scans: each container row keeps a second DRAM bloom over its
  // keys' first prefix_length bytes (one entry per distinct prefix), and an
  // iterator whose ReadOptions::prefix is exactly that long leaves out the
  // rows it rules out. MatrixFS: 9, a dentry's tag and parent inode.
  // 0: none (rows and tables are still skipped by their key ranges).
  size_t prefix_length = 0;
  bool use_cross_row_hints = true;  // off only to measure what they buy
  bool use_row_blooms = true;       // likewise
  // Threads that only read make the flush and the compactions step back
  // behind them (nice 10 while they read; kvcore/background.h,
  // ReaderPresence): right where a thread is a client, as an application's
  // reader thread is. Off for a server whose worker threads serve every
  // client alike (MatrixFS): a worker that served only lookups for a second
  // says nothing about its clients, who write too (a build's compilers), and
  // the step-back only handed the CPU to the processes beside the server
  // (BENCHMARKS.md, issue 16 session 5).
  bool background_yields_to_readers = true;
  // The pool's UUID in 8-4-4-4-12 form (MatrixFS: the superblock's). A new
  // pool is created with it (empty: a random one); an existing pool with
  // another UUID is refused, naming the pool and both UUIDs (empty: only
  // the database's POOL-IDENTITY file is compared).
  std::string nvm_uuid;

  // Open without changing anything (fsck -n): the LOCK is taken (Busy beside
  // a live instance); the MANIFEST is read and the SSD or PM WAL replayed
  // into memtables only; no file is created, written or removed, the pool
  // is mapped copy-on-write, and no flush or compaction thread runs. Reads
  // work; writes, Flush and CompactRange return ReadOnly. Implies
  // create_if_missing = false.
  bool read_only = false;

  // The file layer; nullptr means DefaultFileSystem(). Tests pass a
  // FaultInjectionFileSystem here.
  FileSystem* fs = nullptr;
};

struct ReadOptions {
  const Snapshot* snapshot = nullptr;  // nullptr: latest
  bool verify_checksums = true;
  bool fill_cache = true;
  // Non-empty: the iterator shows only keys that start with prefix (it is
  // !Valid() past them; Seek below prefix seeks prefix, SeekToFirst and
  // SeekToLast stay inside), and it leaves out every memtable-free source
  // that holds no such key: container rows by key range and prefix bloom
  // (Options::prefix_length), tables by key range; a forward scan stops at
  // the prefix's end instead of stepping over the deletions that follow it.
  // Get ignores it.
  std::string prefix;
};

struct WriteOptions {
  // With an SSD WAL: fdatasync the log before the write returns (one sync per
  // group commit). With a PM WAL every write is persisted regardless.
  bool sync = false;
};

}  // namespace mxfs
