// FUSE over io_uring (-o uring, fuse/uring_channel.h): the daemon serves
// requests through per-CPU io_uring entries instead of /dev/fuse. These
// tests mount for real with the kernel's module parameter
// /sys/module/fuse/parameters/enable_uring set to Y (and put back as it was
// afterwards), run a mix of operations, and check through the "transport"
// line of .matrixfs/stats that the ring really served them. Without the
// parameter (not root, or a kernel without FUSE over io_uring) they are
// skipped with a warning.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "fuse/kernel_channel.h"
#include "fuse/uring_channel.h"
#include "tests/fuse/fuse_wire.h"
#include "tests/fuse/mount_fixture.h"

namespace {

using mxfs_test::MountFixture;
using mxfs_test::ReadAll;
using mxfs_test::RunShell;
using mxfs_test::WriteAll;

constexpr const char* kParam = "/sys/module/fuse/parameters/enable_uring";

// Sets the fuse module's enable_uring to value for its lifetime and puts the
// previous value back. ok() is false when the parameter cannot be set.
class EnableUring {
 public:
  explicit EnableUring(const char* value = "Y") {
    std::string old = ReadAll(kParam);
    while (!old.empty() && (old.back() == '\n' || old.back() == ' ')) old.pop_back();
    if (old.empty()) return;
    old_ = old;
    ok_ = WriteAll(kParam, value, O_WRONLY) && ReadAll(kParam).substr(0, 1) == std::string(value).substr(0, 1);
  }
  ~EnableUring() {
    if (!old_.empty()) WriteAll(kParam, old_, O_WRONLY);
  }
  EnableUring(const EnableUring&) = delete;
  EnableUring& operator=(const EnableUring&) = delete;
  bool ok() const { return ok_; }

 private:
  std::string old_;
  bool ok_ = false;
};

// The "transport uring=N devfuse=M uring_entries=K" line as a map.
std::map<std::string, uint64_t> Transport(const MountFixture& m) { return mxfs_test::StatsLine(m, "transport"); }

int PossibleCpus() {
  std::string s = ReadAll("/sys/devices/system/cpu/possible");
  int count = 0;
  std::istringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    int lo = 0, hi = 0;
    if (std::sscanf(part.c_str(), "%d-%d", &lo, &hi) == 2) count += hi - lo + 1;
    else count += 1;
  }
  return count;
}

// Deterministic bytes: byte i of stream seed.
std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

bool WriteSync(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) && fsync(fd) == 0;
  return close(fd) == 0 && ok;
}

// Writes and reads back n bytes with O_DIRECT (n a multiple of 4096).
bool DirectRoundTrip(const std::string& path, size_t n, uint32_t seed) {
  void* mem = nullptr;
  if (posix_memalign(&mem, 4096, n) != 0) return false;
  std::unique_ptr<void, decltype(&std::free)> buf(mem, &std::free);
  std::string data = Pattern(n, seed);
  std::memcpy(buf.get(), data.data(), n);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0644);
  if (fd < 0) return false;
  bool ok = pwrite(fd, buf.get(), n, 0) == static_cast<ssize_t>(n);
  std::memset(buf.get(), 0, n);
  ok = ok && pread(fd, buf.get(), n, 0) == static_cast<ssize_t>(n);
  close(fd);
  return ok && std::memcmp(buf.get(), data.data(), n) == 0;
}

// Writes an INIT reply (max_write, max_pages) for unique through ch's
// WriteReply into a pipe and returns what came out.
std::string InitReplyThrough(mxfs::KernelChannel* ch, uint64_t unique, uint32_t max_write, uint16_t max_pages) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  mxfs::UniqueFd r(p[0]), w(p[1]);
  fuse_init_out out;
  std::memset(&out, 0, sizeof(out));
  out.major = FUSE_KERNEL_VERSION;
  out.flags = FUSE_ASYNC_READ;
  out.max_write = max_write;
  out.max_pages = max_pages;
  fuse_out_header oh = {.len = static_cast<uint32_t>(sizeof(oh) + sizeof(out)), .error = 0, .unique = unique};
  struct iovec iov[2] = {{&oh, sizeof(oh)}, {&out, sizeof(out)}};
  ssize_t n = ch->WriteReply(w.get(), iov, 2);
  REQUIRE(n == static_cast<ssize_t>(sizeof(oh) + sizeof(out)));
  std::string got(static_cast<size_t>(n), '\0');
  REQUIRE(read(r.get(), got.data(), got.size()) == n);
  return got;
}

template <typename T>
T ReplyField(const std::string& reply, size_t off) {
  T v;
  std::memcpy(&v, reply.data() + sizeof(fuse_out_header) + off, sizeof(v));
  return v;
}

#define SKIP_WITHOUT_URING(guard)                                                         \
  do {                                                                                    \
    if (!(guard).ok()) {                                                                  \
      WARN("cannot set " << kParam << " (not root, or no FUSE over io_uring): skipped"); \
      return;                                                                             \
    }                                                                                     \
  } while (0)

}  // namespace

TEST_CASE("Uring: a mixed workload runs through the ring and reads back", "[fuse][uring]") {
  EnableUring guard;
  SKIP_WITHOUT_URING(guard);
  MountFixture m("allow_other,uring");
  CHECK(m.Log().find("granted FUSE_HANDLE_KILLPRIV_V2 FUSE_OVER_IO_URING") != std::string::npos);

  // Small, unaligned and large files (past the 64 KiB inline limit), buffered.
  const size_t sizes[] = {0, 1, 4095, 4097, 65536, 65537, 1u << 20, (1u << 20) + 3, (3u << 20) + 517};
  uint32_t seed = 1;
  for (size_t n : sizes) {
    const std::string path = m.P("f" + std::to_string(n));
    const std::string data = Pattern(n, seed++);
    REQUIRE(WriteAll(path, data));
    CHECK(ReadAll(path) == data);
  }
  // 1 MiB O_DIRECT writes and reads (one request each way, a full payload).
  CHECK(DirectRoundTrip(m.P("direct"), 1u << 20, 77));
  CHECK(DirectRoundTrip(m.P("direct_small"), 8192, 78));

  // Overwrite in the middle, truncate down and up, fsync.
  {
    const std::string path = m.P("f" + std::to_string((3u << 20) + 517));
    std::string data = ReadAll(path);
    const std::string patch = Pattern(10000, 99);
    int fd = open(path.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    REQUIRE(pwrite(fd, patch.data(), patch.size(), 123457) == static_cast<ssize_t>(patch.size()));
    data.replace(123457, patch.size(), patch);
    CHECK(fsync(fd) == 0);
    REQUIRE(ftruncate(fd, 200000) == 0);
    data.resize(200000);
    REQUIRE(ftruncate(fd, 300000) == 0);
    data.resize(300000, '\0');
    close(fd);
    CHECK(ReadAll(path) == data);
  }

  // Names: rename, link, unlink, symlink, mkdir/rmdir.
  REQUIRE(rename(m.P("f1").c_str(), m.P("renamed").c_str()) == 0);
  CHECK(access(m.P("f1").c_str(), F_OK) != 0);
  CHECK(ReadAll(m.P("renamed")) == Pattern(1, 2));
  REQUIRE(link(m.P("renamed").c_str(), m.P("hard").c_str()) == 0);
  struct stat st;
  REQUIRE(stat(m.P("renamed").c_str(), &st) == 0);
  CHECK(st.st_nlink == 2);
  REQUIRE(unlink(m.P("renamed").c_str()) == 0);
  CHECK(ReadAll(m.P("hard")) == Pattern(1, 2));
  REQUIRE(symlink("hard", m.P("sym").c_str()) == 0);
  char target[64] = {};
  CHECK(readlink(m.P("sym").c_str(), target, sizeof(target) - 1) == 4);
  CHECK(std::string(target) == "hard");
  REQUIRE(mkdir(m.P("dir").c_str(), 0755) == 0);
  REQUIRE(mkdir(m.P("dir/sub").c_str(), 0755) == 0);
  CHECK(rmdir(m.P("dir").c_str()) != 0);
  CHECK(errno == ENOTEMPTY);
  REQUIRE(rmdir(m.P("dir/sub").c_str()) == 0);
  REQUIRE(rmdir(m.P("dir").c_str()) == 0);

  // Extended attributes, including a too-small buffer (ERANGE).
  const std::string xval = Pattern(300, 5);
  REQUIRE(setxattr(m.P("hard").c_str(), "user.big", xval.data(), xval.size(), 0) == 0);
  REQUIRE(setxattr(m.P("hard").c_str(), "user.small", "v", 1, 0) == 0);
  char xbuf[512];
  CHECK(getxattr(m.P("hard").c_str(), "user.big", nullptr, 0) == 300);
  CHECK(getxattr(m.P("hard").c_str(), "user.big", xbuf, sizeof(xbuf)) == 300);
  CHECK(std::string(xbuf, 300) == xval);
  CHECK(getxattr(m.P("hard").c_str(), "user.big", xbuf, 10) == -1);
  CHECK(errno == ERANGE);
  ssize_t ln = listxattr(m.P("hard").c_str(), xbuf, sizeof(xbuf));
  REQUIRE(ln > 0);
  std::set<std::string> names;
  for (ssize_t p = 0; p < ln; p += static_cast<ssize_t>(std::strlen(xbuf + p)) + 1) names.insert(xbuf + p);
  CHECK(names == std::set<std::string>{"user.big", "user.small"});
  CHECK(listxattr(m.P("hard").c_str(), xbuf, 3) == -1);
  CHECK(errno == ERANGE);
  CHECK(getxattr(m.P("hard").c_str(), "user.none", xbuf, sizeof(xbuf)) == -1);
  CHECK(errno == ENODATA);

  // A directory of a few thousand entries, listed in full.
  REQUIRE(mkdir(m.P("many").c_str(), 0755) == 0);
  constexpr int kEntries = 3000;
  for (int i = 0; i < kEntries; ++i) {
    int fd = open(m.P("many/e" + std::to_string(i)).c_str(), O_WRONLY | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    close(fd);
  }
  std::set<std::string> seen;
  DIR* d = opendir(m.P("many").c_str());
  REQUIRE(d != nullptr);
  while (dirent* de = readdir(d)) {
    if (std::strcmp(de->d_name, ".") != 0 && std::strcmp(de->d_name, "..") != 0) seen.insert(de->d_name);
  }
  closedir(d);
  CHECK(seen.size() == static_cast<size_t>(kEntries));
  CHECK(seen.count("e0") == 1);
  CHECK(seen.count("e" + std::to_string(kEntries - 1)) == 1);

  auto t = Transport(m);
  INFO(ReadAll(m.P(".matrixfs/stats")));
  // Default: four ring threads per queue, one entry each.
  CHECK(t["uring_entries"] == 4u * static_cast<uint64_t>(PossibleCpus()));
  CHECK(t["uring"] > static_cast<uint64_t>(kEntries));  // the creates alone
  CHECK(m.Log().find("io_uring queue") == std::string::npos);  // no ring errors logged
  // The ring threads keep their own names after serving requests (the
  // callbacks name only libfuse's workers "mxfs-fuse").
  int ring_threads = 0;
  const std::string tasks = "/proc/" + std::to_string(m.pid()) + "/task";
  if (DIR* d = opendir(tasks.c_str())) {
    while (struct dirent* de = readdir(d)) {
      if (de->d_name[0] != '.' && ReadAll(tasks + "/" + de->d_name + "/comm").rfind("mxfs-uring", 0) == 0) ring_threads++;
    }
    closedir(d);
  }
  CHECK(ring_threads == 4 * PossibleCpus());

  // Everything is still there after a clean unmount and a new mount.
  CHECK(m.Stop() == 0);
  m.Start();
  CHECK(ReadAll(m.P("hard")) == Pattern(1, 2));
  CHECK(ReadAll(m.P("f1048576")) == Pattern(1u << 20, 7));
}

TEST_CASE("Uring: SIGTERM and fusermount3 -u end the daemon cleanly", "[fuse][uring]") {
  EnableUring guard;
  SKIP_WITHOUT_URING(guard);
  MountFixture m("allow_other,uring");
  REQUIRE(WriteAll(m.P("a"), "x"));
  CHECK(Transport(m)["uring"] > 0);
  int st = m.Signal(SIGTERM);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(!m.Mounted());

  m.Start();
  CHECK(ReadAll(m.P("a")) == "x");
  CHECK(Transport(m)["uring"] > 0);
  auto [rc, out] = RunShell("fusermount3 -u " + m.mnt());
  INFO(out);
  CHECK(rc == 0);
  CHECK(!m.Mounted());
  st = m.Stop();  // reaps the daemon, which must have exited by itself
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("Uring: kill -9 mid-work loses no fsynced file", "[fuse][uring][crash]") {
  EnableUring guard;
  SKIP_WITHOUT_URING(guard);
  MountFixture m("allow_other,uring");
  constexpr int kFiles = 40;
  for (int i = 0; i < kFiles; ++i) {
    REQUIRE(WriteSync(m.P("s" + std::to_string(i)), Pattern(1000 + 7919 * static_cast<size_t>(i), i)));
  }
  REQUIRE(WriteSync(m.P("big"), Pattern(3u << 20, 1234)));
  // Unsynced work in flight while the daemon dies.
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; !done.load() && i < 100000; ++i) {
      if (!WriteAll(m.P("busy" + std::to_string(i % 50)), Pattern(20000, i))) break;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  m.Kill9();
  done.store(true);
  writer.join();
  CHECK(!m.Mounted());

  m.Start();
  CHECK(Transport(m)["uring"] > 0);
  for (int i = 0; i < kFiles; ++i) {
    CHECK(ReadAll(m.P("s" + std::to_string(i))) == Pattern(1000 + 7919 * static_cast<size_t>(i), i));
  }
  CHECK(ReadAll(m.P("big")) == Pattern(3u << 20, 1234));
  CHECK(m.Stop() == 0);
}

TEST_CASE("Uring: fio verifies buffered and O_DIRECT I/O through the ring", "[fuse][uring]") {
  EnableUring guard;
  SKIP_WITHOUT_URING(guard);
  if (RunShell("command -v fio").first != 0) {
    WARN("fio not installed: skipped");
    return;
  }
  MountFixture m("allow_other,uring");
  const std::string common = "cd " + m.root() + " && fio --output-format=terse --directory=" + m.mnt() +
                             " --size=8m --verify=crc32c --do_verify=1 --verify_fatal=1 --ioengine=psync"
                             " --verify_state_save=0";
  for (const char* job : {" --name=seq --rw=write --bs=128k", " --name=rand --rw=randwrite --bs=4k --size=2m",
                          " --name=seqdirect --rw=write --bs=1m --direct=1",
                          " --name=randdirect --rw=randwrite --bs=4k --size=2m --direct=1"}) {
    auto [rc, out] = RunShell(common + job);
    INFO(job << ": " << out);
    CHECK(rc == 0);
  }
  CHECK(Transport(m)["uring"] > 0);
}

TEST_CASE("Uring: without the module parameter -o uring says so and serves through /dev/fuse", "[fuse][uring]") {
  EnableUring guard("N");
  SKIP_WITHOUT_URING(guard);
  MountFixture m("allow_other,uring");
  REQUIRE(WriteAll(m.P("a"), "through /dev/fuse"));
  CHECK(ReadAll(m.P("a")) == "through /dev/fuse");
  auto t = Transport(m);
  CHECK(t["uring"] == 0);
  CHECK(t["uring_entries"] == 0);
  CHECK(t["devfuse"] > 0);
  const std::string log = m.Log();
  CHECK(log.find("enable_uring is N") != std::string::npos);
  CHECK(log.find("did not offer FUSE_OVER_IO_URING") != std::string::npos);
  CHECK(m.Stop() == 0);
}

TEST_CASE("Uring: the INIT reply grants FUSE_OVER_IO_URING only if asked and offered, and sizes the payload",
          "[fuse][uring]") {
  using mxfs::KernelChannel;
  constexpr uint32_t kUringFlags2 = 1u << 9;  // FUSE_OVER_IO_URING >> 32
  fuse_init_in in;
  std::memset(&in, 0, sizeof(in));
  in.major = FUSE_KERNEL_VERSION;
  in.minor = FUSE_KERNEL_MINOR_VERSION;
  in.flags = FUSE_INIT_EXT;
  in.flags2 = kUringFlags2;

  // Offered but not asked for: unchanged.
  KernelChannel ch;
  ch.SetUring(false);
  std::string req = mxfs::testing::FuseRequest(FUSE_INIT, 300, in);
  ch.ObserveRequest(req.data(), req.size());
  std::string plain = InitReplyThrough(&ch, 300, 1u << 20, 256);
  CHECK(ReplyField<uint32_t>(plain, offsetof(fuse_init_out, flags2)) == 0);
  CHECK(ReplyField<uint32_t>(plain, offsetof(fuse_init_out, flags)) == FUSE_ASYNC_READ);
  CHECK(ch.InitReplied());
  // max(8192, max_write, max_pages * 4096).
  CHECK(ch.InitMaxPayload() == (1u << 20));

  // Asked for, not offered (enable_uring N): unchanged.
  ch.SetUring(true);
  fuse_init_in old = in;
  old.flags2 = 0;
  req = mxfs::testing::FuseRequest(FUSE_INIT, 301, old);
  ch.ObserveRequest(req.data(), req.size());
  std::string unoffered = InitReplyThrough(&ch, 301, 128u << 10, 64);
  CHECK(ReplyField<uint32_t>(unoffered, offsetof(fuse_init_out, flags2)) == 0);
  CHECK_FALSE(ch.UringGranted());
  CHECK(ch.InitMaxPayload() == (256u << 10));  // max_pages * 4096 > max_write

  // Both: granted, with FUSE_INIT_EXT, in the reply to that INIT only.
  req = mxfs::testing::FuseRequest(FUSE_INIT, 302, in);
  ch.ObserveRequest(req.data(), req.size());
  std::string granted = InitReplyThrough(&ch, 302, 4096, 1);
  CHECK(ReplyField<uint32_t>(granted, offsetof(fuse_init_out, flags2)) == kUringFlags2);
  CHECK(ReplyField<uint32_t>(granted, offsetof(fuse_init_out, flags)) == (FUSE_INIT_EXT | FUSE_ASYNC_READ));
  CHECK(ch.UringGranted());
  CHECK(ch.InitMaxPayload() == 8192);  // FUSE_MIN_READ_BUFFER
}

namespace {
struct SinkLog {
  uint64_t take_unique = 0;
  std::string taken;
};
ssize_t TestSink(void* ctx, const struct iovec* iov, int count) {
  auto* log = static_cast<SinkLog*>(ctx);
  fuse_out_header oh;
  std::memcpy(&oh, iov[0].iov_base, sizeof(oh));
  if (oh.unique != log->take_unique) return mxfs::KernelChannel::kNotMine;
  ssize_t n = 0;
  for (int i = 0; i < count; ++i) {
    log->taken.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
    n += static_cast<ssize_t>(iov[i].iov_len);
  }
  return n;
}
}  // namespace

TEST_CASE("Uring: a thread's reply sink takes its replies; the rest, and other threads' replies, go to the fd",
          "[fuse][uring]") {
  using mxfs::KernelChannel;
  int p[2];
  REQUIRE(pipe(p) == 0);
  mxfs::UniqueFd r(p[0]), w(p[1]);
  KernelChannel ch;
  SinkLog log;
  log.take_unique = 77;
  KernelChannel::SetThreadReplySink(TestSink, &log);
  auto reply = [&](uint64_t unique, const std::string& body) {
    fuse_out_header oh = {.len = static_cast<uint32_t>(sizeof(oh) + body.size()), .error = 0, .unique = unique};
    struct iovec iov[2] = {{&oh, sizeof(oh)}, {const_cast<char*>(body.data()), body.size()}};
    return ch.WriteReply(w.get(), iov, 2);
  };
  CHECK(reply(77, "ring") == static_cast<ssize_t>(sizeof(fuse_out_header) + 4));
  CHECK(log.taken.size() == sizeof(fuse_out_header) + 4);
  CHECK(log.taken.substr(sizeof(fuse_out_header)) == "ring");
  CHECK(reply(78, "pipe") == static_cast<ssize_t>(sizeof(fuse_out_header) + 4));
  ssize_t other = 0;
  std::thread t([&] { other = reply(77, "thread"); });  // no sink on that thread
  t.join();
  CHECK(other == static_cast<ssize_t>(sizeof(fuse_out_header) + 6));
  KernelChannel::SetThreadReplySink(nullptr, nullptr);
  CHECK(reply(77, "after") == static_cast<ssize_t>(sizeof(fuse_out_header) + 5));
  std::string got(3 * sizeof(fuse_out_header) + 4 + 6 + 5, '\0');
  REQUIRE(read(r.get(), got.data(), got.size()) == static_cast<ssize_t>(got.size()));
  CHECK(got.substr(sizeof(fuse_out_header), 4) == "pipe");
  CHECK(got.substr(2 * sizeof(fuse_out_header) + 4, 6) == "thread");
  CHECK(got.substr(3 * sizeof(fuse_out_header) + 10, 5) == "after");
  CHECK(log.taken.size() == sizeof(fuse_out_header) + 4);  // nothing more went to the sink
}

TEST_CASE("Uring: the queue count is the number of possible CPUs", "[fuse][uring]") {
  auto n = mxfs::UringChannel::PossibleCpus();
  REQUIRE(n.has_value());
  CHECK(*n == PossibleCpus());
  CHECK(*n >= 1);
}

TEST_CASE("Uring: several ring threads serve concurrent callers correctly", "[fuse][uring]") {
  EnableUring guard;
  SKIP_WITHOUT_URING(guard);
  MountFixture m("allow_other,uring,uring_threads=3");
  constexpr int kCallers = 4;
  constexpr int kFiles = 150;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      const std::string dir = m.P("c" + std::to_string(c));
      if (mkdir(dir.c_str(), 0755) != 0) {
        ++failures;
        return;
      }
      for (int i = 0; i < kFiles; ++i) {
        const std::string path = dir + "/f" + std::to_string(i);
        const std::string data = Pattern(100 + static_cast<size_t>(i) * 997, static_cast<uint32_t>(c * 1000 + i));
        if (!WriteAll(path, data) || ReadAll(path) != data) ++failures;
        if (i % 3 == 0 && unlink(path.c_str()) != 0) ++failures;
      }
    });
  }
  for (auto& t : callers) t.join();
  CHECK(failures.load() == 0);
  for (int c = 0; c < kCallers; ++c) {
    int left = 0;
    DIR* d = opendir(m.P("c" + std::to_string(c)).c_str());
    REQUIRE(d != nullptr);
    while (dirent* de = readdir(d)) left += de->d_name[0] == 'f' ? 1 : 0;
    closedir(d);
    CHECK(left == kFiles - (kFiles + 2) / 3);
  }
  auto t = Transport(m);
  CHECK(t["uring_entries"] == 3u * static_cast<uint64_t>(PossibleCpus()));
  CHECK(t["uring"] > static_cast<uint64_t>(kCallers * kFiles));
  CHECK(m.Stop() == 0);
}
