#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <atomic>
#include <thread>
#include <vector>
#include <string>

#include "base/random.h"
#include "ssd/file_system.h"
#include "ssd/io_ring.h"
#include "ssd/mapped_copy.h"
#include "tests/ssd/scratch_dir.h"

using namespace mxfs;

namespace {

// Runs a test body on one backend; restores io_uring for the next test.
struct Backend {
  explicit Backend(bool fallback) : fallback(fallback) { SetIoUringDisabledForTesting(fallback); }
  ~Backend() { SetIoUringDisabledForTesting(false); }
  const char* name() const { return fallback ? "pread/pwrite" : "io_uring"; }
  bool fallback;
};

std::string RandomBytes(Random* rnd, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rnd->Next());
  return s;
}

std::string ReadAll(FileSystem* fs, const std::string& path) {
  auto r = ReadFileToString(fs, path);
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace

TEST_CASE("FileSystem: appended data reads back after sync and close, on both backends") {
  Backend backend(GENERATE(false, true));
  INFO("backend " << backend.name());
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(1);
  const std::string path = dir.File("data");
  std::string expect;
  {
    auto f = fs->NewWritableFile(path);
    REQUIRE(f.has_value());
    // Small appends that stay in the buffer, one that crosses it, one larger than it.
    for (size_t n : {1u, 100u, 4095u, 70000u, 3u, 200000u, 17u}) {
      std::string chunk = RandomBytes(&rnd, n);
      REQUIRE((*f)->Append(chunk).ok());
      expect += chunk;
      CHECK((*f)->Size() == expect.size());
    }
    REQUIRE((*f)->Sync().ok());
    REQUIRE((*f)->Close().ok());
  }
  CHECK(ReadAll(fs.get(), path) == expect);
  auto size = fs->GetFileSize(path);
  REQUIRE(size.has_value());
  CHECK(*size == expect.size());

  // Appendable file continues at the end and reports the full size.
  {
    auto f = fs->NewAppendableFile(path);
    REQUIRE(f.has_value());
    CHECK((*f)->Size() == expect.size());
    REQUIRE((*f)->Append("tail").ok());
    REQUIRE((*f)->Close().ok());
  }
  expect += "tail";
  CHECK(ReadAll(fs.get(), path) == expect);

  FileSystemStats st = fs->GetStats();
  CHECK(st.bytes_written == expect.size());
  CHECK(st.bytes_read >= expect.size());
  CHECK(st.sync_ops >= 1);
  if (backend.fallback) {
    CHECK(st.uring_ops == 0);
    CHECK(st.fallback_ops > 0);
  } else if (IoUringAvailable()) {
    CHECK(st.uring_ops > 0);
  }
}

TEST_CASE("FileSystem: AppendV writes its parts in order, buffered and O_DIRECT, beside Append") {
  const bool direct = GENERATE(false, true);
  INFO("direct " << direct);
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(3);
  FileOptions fo;
  fo.direct_io = direct;
  const std::string path = dir.File("v");
  std::string expect;
  {
    auto f = fs->NewWritableFile(path, fo);
    REQUIRE(f.has_value());
    REQUIRE((*f)->Append("head").ok());
    expect += "head";
    // Few small parts (into the buffer), then 3000 parts (more than IOV_MAX
    // in one call: several gathered writes), some empty, some large.
    for (size_t parts : {3u, 3000u, 2u}) {
      std::vector<std::string> chunks;
      for (size_t i = 0; i < parts; i++) chunks.push_back(RandomBytes(&rnd, i % 7 == 3 ? 0 : rnd.Uniform(i % 50 == 0 ? 70000 : 600)));
      std::vector<Slice> slices(chunks.begin(), chunks.end());
      REQUIRE((*f)->AppendV(slices.data(), slices.size()).ok());
      for (const auto& c : chunks) expect += c;
      CHECK((*f)->Size() == expect.size());
      REQUIRE((*f)->Append("between").ok());
      expect += "between";
    }
    REQUIRE((*f)->Sync().ok());
    REQUIRE((*f)->Close().ok());
  }
  CHECK(ReadAll(fs.get(), path) == expect);
}

TEST_CASE("FileSystem: new files are 0644, random-rw files 0600, directories 0755") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  mode_t old = ::umask(022);
  {
    auto f = fs->NewWritableFile(dir.File("w"));
    REQUIRE(f.has_value());
    auto rw = fs->NewRandomRWFile(dir.File("rw"), true);
    REQUIRE(rw.has_value());
    REQUIRE(fs->CreateDir(dir.File("d")).ok());
  }
  ::umask(old);
  struct stat st;
  REQUIRE(::stat(dir.File("w").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  REQUIRE(::stat(dir.File("rw").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat(dir.File("d").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);
  CHECK(fs->CreateDir(dir.File("d")).ok());  // existing directory is fine
}

TEST_CASE("FileSystem: rename, children, remove and existence") {
  Backend backend(GENERATE(false, true));
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("a"), "alpha").ok());
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("b"), "beta").ok());
  REQUIRE(fs->RenameFile(dir.File("a"), dir.File("c")).ok());
  CHECK_FALSE(fs->FileExists(dir.File("a")));
  CHECK(fs->FileExists(dir.File("c")));
  CHECK(ReadAll(fs.get(), dir.File("c")) == "alpha");
  auto kids = fs->GetChildren(dir.path());
  REQUIRE(kids.has_value());
  std::sort(kids->begin(), kids->end());
  CHECK(*kids == std::vector<std::string>{"b", "c"});  // no "." "..", no leftover .tmp
  REQUIRE(fs->RemoveFile(dir.File("b")).ok());
  CHECK_FALSE(fs->FileExists(dir.File("b")));
  REQUIRE(fs->SyncDir(dir.path()).ok());
  // Rename over an existing file replaces it.
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("c"), "gamma").ok());
  CHECK(ReadAll(fs.get(), dir.File("c")) == "gamma");
}

TEST_CASE("FileSystem: missing files give NotFound naming the path") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string missing = dir.File("no-such-file");
  auto seq = fs->NewSequentialFile(missing);
  REQUIRE_FALSE(seq.has_value());
  CHECK(seq.error().IsNotFound());
  CHECK(seq.error().message().find(missing) != std::string_view::npos);
  CHECK(seq.error().err() == ENOENT);
  auto ra = fs->NewRandomAccessFile(missing);
  REQUIRE_FALSE(ra.has_value());
  CHECK(ra.error().IsNotFound());
  auto rw = fs->NewRandomRWFile(missing, false);
  REQUIRE_FALSE(rw.has_value());
  CHECK(rw.error().IsNotFound());
  Status s = fs->RemoveFile(missing);
  CHECK(s.IsNotFound());
  CHECK(s.message().find(missing) != std::string_view::npos);
  auto size = fs->GetFileSize(missing);
  REQUIRE_FALSE(size.has_value());
  CHECK(size.error().IsNotFound());
  auto kids = fs->GetChildren(dir.File("no-such-dir"));
  REQUIRE_FALSE(kids.has_value());
  CHECK(kids.error().IsNotFound());
  CHECK(fs->RenameFile(missing, dir.File("x")).IsNotFound());
}

TEST_CASE("FileSystem: second lock on the same file is Busy and names it") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("LOCK");
  auto first = fs->LockFile(path);
  REQUIRE(first.has_value());
  auto second = fs->LockFile(path);
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().IsBusy());
  CHECK(second.error().message().find(path) != std::string_view::npos);
  first->reset();  // releasing lets the next owner in
  auto third = fs->LockFile(path);
  CHECK(third.has_value());
}

TEST_CASE("FileSystem: reads are short only at end of file") {
  Backend backend(GENERATE(false, true));
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(2);
  const std::string data = RandomBytes(&rnd, 10000);
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("f"), data).ok());
  auto f = fs->NewRandomAccessFile(dir.File("f"));
  REQUIRE(f.has_value());
  std::string scratch(20000, '\0');
  Slice got;
  REQUIRE((*f)->Read(100, 5000, &got, scratch.data()).ok());
  CHECK(got == Slice(data.data() + 100, 5000));
  REQUIRE((*f)->Read(9000, 5000, &got, scratch.data()).ok());
  CHECK(got == Slice(data.data() + 9000, 1000));
  REQUIRE((*f)->Read(10000, 10, &got, scratch.data()).ok());
  CHECK(got.empty());
  REQUIRE((*f)->Read(50000, 10, &got, scratch.data()).ok());
  CHECK(got.empty());
  auto size = (*f)->Size();
  REQUIRE(size.has_value());
  CHECK(*size == data.size());

  auto seq = fs->NewSequentialFile(dir.File("f"));
  REQUIRE(seq.has_value());
  REQUIRE((*seq)->Skip(9990).ok());
  REQUIRE((*seq)->Read(100, &got, scratch.data()).ok());
  CHECK(got == Slice(data.data() + 9990, 10));
  REQUIRE((*seq)->Read(100, &got, scratch.data()).ok());
  CHECK(got.empty());
}

TEST_CASE("FileSystem: MultiRead fills every request of a batch") {
  Backend backend(GENERATE(false, true));
  INFO("backend " << backend.name());
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(3);
  const std::string data = RandomBytes(&rnd, 1 << 20);
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("f"), data).ok());
  auto f = fs->NewRandomAccessFile(dir.File("f"));
  REQUIRE(f.has_value());
  // More requests than one submission queue holds, plus one past EOF and one straddling it.
  constexpr size_t kN = 300;
  std::vector<ReadRequest> reqs(kN);
  std::vector<std::string> bufs(kN);
  for (size_t i = 0; i < kN; i++) {
    reqs[i].offset = rnd.Uniform(data.size());
    reqs[i].len = 1 + rnd.Uniform(8192);
    bufs[i].resize(reqs[i].len);
    reqs[i].scratch = bufs[i].data();
  }
  reqs[kN - 2].offset = data.size() + 10;
  reqs[kN - 1].offset = data.size() - 5;
  reqs[kN - 1].len = 100;
  REQUIRE((*f)->MultiRead(reqs.data(), kN).ok());
  for (size_t i = 0; i < kN; i++) {
    INFO("request " << i);
    REQUIRE(reqs[i].status.ok());
    size_t avail = reqs[i].offset >= data.size() ? 0 : data.size() - reqs[i].offset;
    size_t want = std::min(avail, reqs[i].len);
    CHECK(reqs[i].result == Slice(data.data() + std::min<size_t>(reqs[i].offset, data.size()), want));
  }
}

TEST_CASE("FileSystem: random-rw file keeps holes, truncates and allocates") {
  Backend backend(GENERATE(false, true));
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  auto f = fs->NewRandomRWFile(dir.File("obj"), true);
  REQUIRE(f.has_value());
  RandomRWFile& rw = **f;
  REQUIRE(rw.Write(1 << 20, "far").ok());
  REQUIRE(rw.Write(10, "near").ok());
  auto size = rw.Size();
  REQUIRE(size.has_value());
  CHECK(*size == (1u << 20) + 3);
  std::string scratch(64, 'x');
  Slice got;
  REQUIRE(rw.Read(0, 14, &got, scratch.data()).ok());
  CHECK(got == Slice(std::string(10, '\0') + "near"));
  REQUIRE(rw.Read(1 << 20, 64, &got, scratch.data()).ok());
  CHECK(got == Slice("far"));
  // The gap is a hole: the first data after offset 4096 is at 1 MiB.
  off_t data_at = ::lseek(rw.fd(), 4096, SEEK_DATA);
  CHECK(data_at == (1 << 20));
  REQUIRE(rw.Truncate(12).ok());
  size = rw.Size();
  REQUIRE(size.has_value());
  CHECK(*size == 12);
  REQUIRE(rw.Read(0, 64, &got, scratch.data()).ok());
  CHECK(got == Slice(std::string(10, '\0') + "ne"));
  REQUIRE(rw.Allocate(0, 0, 1 << 16).ok());
  size = rw.Size();
  REQUIRE(size.has_value());
  CHECK(*size == (1u << 16));
  REQUIRE(rw.Allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096).ok());
  REQUIRE(rw.Read(8, 4, &got, scratch.data()).ok());
  CHECK(got == Slice(std::string(4, '\0')));
  REQUIRE(rw.Sync().ok());
  // Reopen without create sees the same bytes.
  f->reset();
  auto again = fs->NewRandomRWFile(dir.File("obj"), false);
  REQUIRE(again.has_value());
  size = (*again)->Size();
  REQUIRE(size.has_value());
  CHECK(*size == (1u << 16));
}

TEST_CASE("FileSystem: free space is reported for the data directory") {
  ScratchDir dir;
  uint64_t free_bytes = 0, total_bytes = 0;
  REQUIRE(DefaultFileSystem()->GetFreeSpace(dir.path(), &free_bytes, &total_bytes).ok());
  CHECK(total_bytes > 0);
  CHECK(free_bytes <= total_bytes);
  CHECK(DefaultFileSystem()->GetFreeSpace(dir.File("missing"), &free_bytes, &total_bytes).IsNotFound());
}

TEST_CASE("FileSystem: O_DIRECT files with odd sizes come back byte-exact") {
  Backend backend(GENERATE(false, true));
  INFO("backend " << backend.name());
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(9);
  FileOptions direct;
  direct.direct_io = true;
  const std::string path = dir.File("direct");
  std::string expect;
  {
    auto f = fs->NewWritableFile(path, direct);
    REQUIRE(f.has_value());
    for (int i = 0; i < 40; i++) {
      std::string chunk = RandomBytes(&rnd, rnd.Uniform(i % 7 == 0 ? 150000 : 5000));
      REQUIRE((*f)->Append(chunk).ok());
      expect += chunk;
      if (i % 5 == 0) {
        // A flush mid-stream leaves a padded tail that the next flush completes.
        REQUIRE((*f)->Flush().ok());
        auto size = fs->GetFileSize(path);
        REQUIRE(size.has_value());
        CHECK(*size == expect.size());
      }
    }
    REQUIRE((*f)->Append("odd").ok());
    expect += "odd";
    REQUIRE((*f)->Sync().ok());
    REQUIRE((*f)->Close().ok());
  }
  REQUIRE(expect.size() % 4096 != 0);
  auto size = fs->GetFileSize(path);
  REQUIRE(size.has_value());
  CHECK(*size == expect.size());
  CHECK(ReadAll(fs.get(), path) == expect);

  auto rf = fs->NewRandomAccessFile(path, direct);
  REQUIRE(rf.has_value());
  std::string scratch(600000, '\0');
  for (int i = 0; i < 50; i++) {
    uint64_t off = rnd.Uniform(expect.size() + 100);
    size_t n = 1 + rnd.Uniform(i % 10 == 0 ? 500000 : 9000);
    Slice got;
    REQUIRE((*rf)->Read(off, n, &got, scratch.data()).ok());
    size_t avail = off >= expect.size() ? 0 : expect.size() - off;
    REQUIRE(got.size() == std::min(avail, n));
    CHECK(got == Slice(expect.data() + std::min<uint64_t>(off, expect.size()), got.size()));
  }
  ReadRequest reqs[3];
  std::string b0(10, '\0'), b1(5000, '\0'), b2(10, '\0');
  reqs[0] = {1, 10, b0.data(), {}, {}};
  reqs[1] = {4095, 5000, b1.data(), {}, {}};
  reqs[2] = {expect.size() - 3, 10, b2.data(), {}, {}};
  REQUIRE((*rf)->MultiRead(reqs, 3).ok());
  CHECK(reqs[0].result == Slice(expect.data() + 1, 10));
  CHECK(reqs[1].result == Slice(expect.data() + 4095, 5000));
  CHECK(reqs[2].result == Slice("odd"));
}

TEST_CASE("FileSystem: O_DIRECT random-rw writes at unaligned offsets keep neighbours and size") {
  Backend backend(GENERATE(false, true));
  INFO("backend " << backend.name());
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(10);
  FileOptions direct;
  direct.direct_io = true;
  auto f = fs->NewRandomRWFile(dir.File("obj"), true, direct);
  REQUIRE(f.has_value());
  std::string model;
  for (int i = 0; i < 60; i++) {
    uint64_t off = rnd.Uniform(model.size() + 20000);
    std::string data = RandomBytes(&rnd, 1 + rnd.Uniform(i % 9 == 0 ? 300000 : 7000));
    REQUIRE((*f)->Write(off, data).ok());
    if (model.size() < off + data.size()) model.resize(off + data.size(), '\0');
    model.replace(off, data.size(), data);
    auto size = (*f)->Size();
    REQUIRE(size.has_value());
    REQUIRE(*size == model.size());
  }
  std::string scratch(model.size(), '\0');
  Slice got;
  REQUIRE((*f)->Read(0, model.size(), &got, scratch.data()).ok());
  CHECK(got == Slice(model));
  REQUIRE((*f)->Sync().ok());
  f->reset();
  CHECK(ReadAll(fs.get(), dir.File("obj")) == model);
}

TEST_CASE("FileSystem: io_uring is used when available and each thread gets its own ring") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(12);
  const std::string data = RandomBytes(&rnd, 1 << 20);
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("f"), data).ok());
  auto f = fs->NewRandomAccessFile(dir.File("f"));
  REQUIRE(f.has_value());
  const RandomAccessFile& file = **f;
  const bool uring = IoUringAvailable();
  const uint64_t before = fs->GetStats().uring_ops;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      Random r(100 + t);
      std::string scratch(4096, '\0');
      for (int i = 0; i < 500; i++) {
        uint64_t off = r.Uniform(data.size() - 4096);
        Slice got;
        Status s = file.Read(off, 4096, &got, scratch.data());
        if (!s.ok() || got != Slice(data.data() + off, 4096)) bad++;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad == 0);
  if (uring) {
    CHECK(fs->GetStats().uring_ops >= before + 2000);
    // The O_DIRECT bounce buffer is registered with the ring (8 MiB memlock suffices).
    REQUIRE(IoRing::ForThisThread() != nullptr);
    CHECK(IoRing::ForThisThread()->buffer_registered());
  }
  SetIoUringDisabledForTesting(true);
  CHECK_FALSE(IoUringAvailable());
  SetIoUringDisabledForTesting(false);
  FileOptions plain;
  plain.use_io_uring = false;
  auto g = fs->NewRandomAccessFile(dir.File("f"), plain);
  REQUIRE(g.has_value());
  const uint64_t uring_ops = fs->GetStats().uring_ops;
  std::string scratch(10, '\0');
  Slice got;
  REQUIRE((*g)->Read(0, 10, &got, scratch.data()).ok());
  CHECK(fs->GetStats().uring_ops == uring_ops);  // use_io_uring=false bypasses the ring
}

namespace {

int CountIoUringFds() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code lec;
    auto target = std::filesystem::read_symlink(e.path(), lec);
    if (!lec && target.string().find("io_uring") != std::string::npos) n++;
  }
  return n;
}

}  // namespace

TEST_CASE("FileSystem: a thread's ring is torn down when the thread exits") {
  if (!IoUringAvailable()) return;  // nothing to tear down on this kernel
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("f"), "data").ok());
  auto f = fs->NewRandomAccessFile(dir.File("f"));
  REQUIRE(f.has_value());
  const int before = CountIoUringFds();
  bool read_ok = false;
  int during = 0;
  std::thread t([&] {
    char buf[8];
    Slice got;
    read_ok = (*f)->Read(0, 4, &got, buf).ok() && got == Slice("data");
    during = CountIoUringFds();
  });
  t.join();
  CHECK(read_ok);
  CHECK(during == before + 1);
  CHECK(CountIoUringFds() == before);
}

TEST_CASE("FileSystem: with pread_single_reads a Read goes through pread and MultiRead still through the ring") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(21);
  const std::string data = RandomBytes(&rnd, 64 << 10);
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("f"), data).ok());
  FileOptions opts;
  opts.pread_single_reads = true;
  auto f = fs->NewRandomAccessFile(dir.File("f"), opts);
  REQUIRE(f.has_value());
  const FileSystemStats before = fs->GetStats();
  std::string scratch(4096, '\0');
  for (uint64_t off : {0ull, 4096ull, 60000ull}) {
    Slice got;
    REQUIRE((*f)->Read(off, 4096, &got, scratch.data()).ok());
    const size_t want = std::min<size_t>(4096, data.size() - off);
    CHECK(got == Slice(data.data() + off, want));
  }
  // Short only at end of file, as on every backend.
  Slice tail;
  REQUIRE((*f)->Read(data.size() - 10, 100, &tail, scratch.data()).ok());
  CHECK(tail == Slice(data.data() + data.size() - 10, 10));
  const FileSystemStats after = fs->GetStats();
  CHECK(after.fallback_ops == before.fallback_ops + 4);
  CHECK(after.uring_ops == before.uring_ops);
  CHECK(after.read_ops == before.read_ops + 4);

  std::vector<ReadRequest> reqs(3);
  std::vector<std::string> bufs(3, std::string(100, '\0'));
  for (size_t i = 0; i < reqs.size(); i++) {
    reqs[i].offset = 1000 * i;
    reqs[i].len = 100;
    reqs[i].scratch = bufs[i].data();
  }
  REQUIRE((*f)->MultiRead(reqs.data(), reqs.size()).ok());
  for (size_t i = 0; i < reqs.size(); i++) CHECK(reqs[i].result == Slice(data.data() + 1000 * i, 100));
  if (IoUringAvailable()) CHECK(fs->GetStats().uring_ops == after.uring_ops + 3);
}

TEST_CASE("FileSystem: with mmap_reads a Read copies from the mapping, without a system call") {
  Backend backend(GENERATE(false, true));
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(22);
  const std::string data = RandomBytes(&rnd, 64 << 10);
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("f"), data).ok());
  FileOptions opts;
  opts.pread_single_reads = true;
  opts.mmap_reads = true;
  auto f = fs->NewRandomAccessFile(dir.File("f"), opts);
  REQUIRE(f.has_value());
  const FileSystemStats before = fs->GetStats();
  std::string scratch(8192, '\0');
  for (uint64_t off : {0ull, 4096ull, 5000ull, 60000ull, 65536ull - 4096}) {
    Slice got;
    REQUIRE((*f)->Read(off, 4096, &got, scratch.data()).ok());
    CHECK(got == Slice(data.data() + off, 4096));
  }
  const FileSystemStats mapped = fs->GetStats();
  CHECK(mapped.read_ops == before.read_ops + 5);
  CHECK(mapped.bytes_read == before.bytes_read + 5 * 4096);
  CHECK(mapped.fallback_ops == before.fallback_ops);  // no pread
  CHECK(mapped.uring_ops == before.uring_ops);
  // Past the end: pread, short only at end of file as on every backend.
  Slice tail;
  REQUIRE((*f)->Read(data.size() - 10, 100, &tail, scratch.data()).ok());
  CHECK(tail == Slice(data.data() + data.size() - 10, 10));
  REQUIRE((*f)->Read(data.size() + 5, 100, &tail, scratch.data()).ok());
  CHECK(tail.empty());
  CHECK(fs->GetStats().fallback_ops == mapped.fallback_ops + 2);

  // An empty file cannot be mapped: it is read (as nothing) all the same.
  REQUIRE(WriteFileAtomic(fs.get(), dir.File("empty"), "").ok());
  auto e = fs->NewRandomAccessFile(dir.File("empty"), opts);
  REQUIRE(e.has_value());
  REQUIRE((*e)->Read(0, 10, &tail, scratch.data()).ok());
  CHECK(tail.empty());
}

TEST_CASE("FileSystem: a mapped file shortened behind the reader's back is a short read, not a SIGBUS") {
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  Random rnd(23);
  const std::string data = RandomBytes(&rnd, 64 << 10);
  const std::string path = dir.File("f");
  REQUIRE(WriteFileAtomic(fs.get(), path, data).ok());
  FileOptions opts;
  opts.pread_single_reads = true;
  opts.mmap_reads = true;
  auto f = fs->NewRandomAccessFile(path, opts);
  REQUIRE(f.has_value());
  std::string scratch(4096, '\0');
  Slice got;
  REQUIRE((*f)->Read(0, 4096, &got, scratch.data()).ok());
  CHECK(got == Slice(data.data(), 4096));
  // Tables and blob files never shrink; this one does, under the mapping.
  REQUIRE(::truncate(path.c_str(), 8192) == 0);
  const size_t faults = MappedCopyFaults();
  REQUIRE((*f)->Read(32768, 4096, &got, scratch.data()).ok());
  CHECK(got.empty());  // pread: end of file
  CHECK(MappedCopyFaults() == faults + 1);
  // The part that is still there reads as before, from the mapping.
  REQUIRE((*f)->Read(4096, 4096, &got, scratch.data()).ok());
  CHECK(got == Slice(data.data() + 4096, 4096));
  CHECK(MappedCopyFaults() == faults + 1);
  // A read that straddles the new end: what pread returns.
  REQUIRE((*f)->Read(6000, 4096, &got, scratch.data()).ok());
  CHECK(got == Slice(data.data() + 6000, 8192 - 6000));
  CHECK(MappedCopyFaults() == faults + 2);
}

TEST_CASE("MappedCopy: a SIGBUS outside a guarded copy is not caught, and a guard in one thread is not another's") {
  // Guarded copies in several threads at once, each of a faulting range.
  ScratchDir dir;
  auto fs = NewDefaultFileSystem();
  const std::string path = dir.File("f");
  REQUIRE(WriteFileAtomic(fs.get(), path, std::string(16 << 10, 'x')).ok());
  FileOptions opts;
  opts.mmap_reads = true;
  auto f = fs->NewRandomAccessFile(path, opts);
  REQUIRE(f.has_value());
  REQUIRE(::truncate(path.c_str(), 0) == 0);
  const size_t faults = MappedCopyFaults();
  std::atomic<int> short_reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      std::string scratch(4096, '\0');
      for (int i = 0; i < 50; i++) {
        Slice got;
        if ((*f)->Read(4096 * (i % 4), 4096, &got, scratch.data()).ok() && got.empty()) short_reads++;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(short_reads == 200);
  CHECK(MappedCopyFaults() == faults + 200);

  // Touching the mapping outside MappedCopy still ends the process (in a
  // child): the handler passes SIGBUS on to the previous or default action.
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  void* map = ::mmap(nullptr, 16 << 10, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  REQUIRE(map != MAP_FAILED);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    volatile char c = static_cast<volatile char*>(map)[100];
    (void)c;
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  // Killed by SIGBUS (under ASan, which reports it: exit code 1).
  CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
  if (WIFSIGNALED(status)) CHECK(WTERMSIG(status) == SIGBUS);
  ::munmap(map, 16 << 10);
}
