// Randomized file-operation exerciser: the same random operations on the
// mount and on a reference directory on the local disk; contents compared
// after each step (with the page cache dropped, so the bytes come from the
// daemon) and again after remounts.
#include <dirent.h>
#include <sys/stat.h>

#include "base/random.h"
#include "tests/fuse/mount_fixture.h"

using mxfs_test::MountFixture;
using mxfs_test::ReadAll;

namespace {

// Reads path bypassing clean cached pages: fsync, then drop them.
std::string ReadUncached(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return "<missing>";
  fsync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return ReadAll(path);
}

bool Exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

void Compare(MountFixture& m, const std::string& ref, int nfiles, int step, bool uncached) {
  for (int i = 0; i < nfiles; ++i) {
    std::string name = "f" + std::to_string(i);
    bool a = Exists(m.P(name)), b = Exists(ref + "/" + name);
    INFO("step " << step << " file " << name);
    REQUIRE(a == b);
    if (!a) continue;
    std::string got = uncached ? ReadUncached(m.P(name)) : ReadAll(m.P(name));
    std::string want = ReadAll(ref + "/" + name);
    REQUIRE(got.size() == want.size());
    if (got != want) {
      size_t k = 0;
      while (k < got.size() && got[k] == want[k]) ++k;
      FAIL("contents differ first at offset " << k);
    }
  }
}

void Exercise(uint64_t seed, int steps) {
  MountFixture m("allow_other", "inline_limit=65536,block_size=4096");
  std::string ref = m.root() + "/ref";
  REQUIRE(mkdir(ref.c_str(), 0755) == 0);
  mxfs::Random rnd(seed);
  const int kFiles = 6;
  auto both = [&](const std::function<int(const std::string&)>& op) {
    int a = op(m.mnt());
    int b = op(ref);
    REQUIRE(a == b);
  };
  for (int step = 0; step < steps; ++step) {
    std::string f = "/f" + std::to_string(rnd.Uniform(kFiles));
    std::string g = "/f" + std::to_string(rnd.Uniform(kFiles));
    uint64_t kind = rnd.Uniform(100);
    if (kind < 55) {
      // Write at a random offset, often near the inline limit.
      uint64_t off = rnd.OneIn(3) ? 65536 - rnd.Uniform(8192) : rnd.Uniform(200000);
      size_t len = 1 + rnd.Uniform(rnd.OneIn(4) ? 70000 : 5000);
      std::string data(len, '\0');
      for (auto& c : data) c = static_cast<char>('a' + rnd.Uniform(26));
      bool append = rnd.OneIn(6);
      both([&](const std::string& base) {
        int fd = open((base + f).c_str(), O_CREAT | O_WRONLY | (append ? O_APPEND : 0), 0644);
        if (fd < 0) return errno;
        ssize_t n = append ? write(fd, data.data(), len) : pwrite(fd, data.data(), len, static_cast<off_t>(off));
        close(fd);
        return n == static_cast<ssize_t>(len) ? 0 : -1;
      });
    } else if (kind < 72) {
      uint64_t size = rnd.OneIn(2) ? rnd.Uniform(70000) : rnd.Uniform(300000);
      both([&](const std::string& base) { return truncate((base + f).c_str(), static_cast<off_t>(size)) ? errno : 0; });
    } else if (kind < 82) {
      both([&](const std::string& base) { return rename((base + f).c_str(), (base + g).c_str()) ? errno : 0; });
    } else if (kind < 88) {
      both([&](const std::string& base) { return unlink((base + f).c_str()) ? errno : 0; });
    } else if (kind < 94) {
      // Punch a hole.
      uint64_t off = rnd.Uniform(150000), len = 1 + rnd.Uniform(40000);
      both([&](const std::string& base) {
        int fd = open((base + f).c_str(), O_WRONLY);
        if (fd < 0) return errno;
        int rc = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off), static_cast<off_t>(len));
        int e = rc ? errno : 0;
        close(fd);
        return e;
      });
    } else {
      both([&](const std::string& base) { return link((base + f).c_str(), (base + g).c_str()) ? errno : 0; });
    }
    Compare(m, ref, kFiles, step, step % 10 == 0);
    if (step == steps / 2) {
      REQUIRE(m.Stop() == 0);
      m.Start();
      Compare(m, ref, kFiles, step, false);
    }
  }
  REQUIRE(m.Stop() == 0);
  m.Start();
  Compare(m, ref, kFiles, steps, false);
}

}  // namespace

TEST_CASE("Exerciser: random writes, truncates, holes and renames match a local directory (seed 1)", "[fuse][exerciser]") {
  Exercise(1, 1500);
}

TEST_CASE("Exerciser: random writes, truncates, holes and renames match a local directory (seed 2)", "[fuse][exerciser]") {
  Exercise(2, 1500);
}
