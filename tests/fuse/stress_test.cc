// Concurrency: several threads create, rename, link and unlink in shared
// directories; afterwards every name resolves and link counts match the tree.
#include <dirent.h>

#include <atomic>
#include <map>
#include <set>

#include "base/random.h"
#include "tests/fuse/mount_fixture.h"

using mxfs_test::MountFixture;

namespace {

struct Tree {
  std::map<ino_t, int> names_per_ino;  // regular files
  std::map<ino_t, nlink_t> nlink;
  int files = 0, dirs = 0;
  std::vector<std::string> problems;
};

void Walk(const std::string& dir, Tree* t) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    t->problems.push_back("opendir " + dir + ": " + std::strerror(errno));
    return;
  }
  int subdirs = 0;
  std::vector<std::string> names;
  while (struct dirent* de = readdir(d)) {
    std::string n = de->d_name;
    if (n == "." || n == "..") continue;
    names.push_back(n);
  }
  closedir(d);
  for (const auto& n : names) {
    std::string p = dir + "/" + n;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) {
      t->problems.push_back("listed name does not resolve: " + p);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      ++subdirs;
      ++t->dirs;
      Walk(p, t);
    } else {
      ++t->files;
      t->names_per_ino[st.st_ino]++;
      t->nlink[st.st_ino] = st.st_nlink;
    }
  }
  struct stat self;
  if (stat(dir.c_str(), &self) != 0 || self.st_nlink != static_cast<nlink_t>(2 + subdirs)) {
    t->problems.push_back("directory " + dir + " nlink " + std::to_string(self.st_nlink) + ", expected " +
                          std::to_string(2 + subdirs));
  }
}

void CheckTree(const std::string& root) {
  Tree t;
  Walk(root, &t);
  for (const auto& [ino, n] : t.names_per_ino) {
    if (t.nlink[ino] != static_cast<nlink_t>(n)) {
      t.problems.push_back("inode " + std::to_string(ino) + " has nlink " + std::to_string(t.nlink[ino]) +
                           " but " + std::to_string(n) + " names");
    }
  }
  INFO("files " << t.files << " dirs " << t.dirs);
  for (const auto& p : t.problems) FAIL_CHECK(p);
  REQUIRE(t.problems.empty());
  REQUIRE(t.files > 0);
}

}  // namespace

TEST_CASE("Stress: concurrent create/rename/link/unlink keeps the tree consistent", "[fuse][stress]") {
  MountFixture m;
  const int kDirs = 3, kThreads = 4, kOps = 1500, kNames = 40;
  for (int d = 0; d < kDirs; ++d) REQUIRE(mkdir(m.P("d" + std::to_string(d)).c_str(), 0755) == 0);
  std::atomic<int> unexpected{0};
  std::atomic<int> done_ops{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t]() {
      mxfs::Random rnd(1000 + t);
      auto name = [&]() {
        return m.P("d" + std::to_string(rnd.Uniform(kDirs)) + "/n" + std::to_string(rnd.Uniform(kNames)));
      };
      for (int i = 0; i < kOps; ++i) {
        int rc = 0;
        switch (rnd.Uniform(7)) {
          case 0:
          case 1: {
            int fd = open(name().c_str(), O_CREAT | O_WRONLY, 0644);
            if (fd >= 0) {
              if (write(fd, "abc", 3) != 3) unexpected++;
              close(fd);
            } else {
              rc = errno;
            }
            break;
          }
          case 2: rc = rename(name().c_str(), name().c_str()) ? errno : 0; break;
          case 3: rc = link(name().c_str(), name().c_str()) ? errno : 0; break;
          case 4: rc = unlink(name().c_str()) ? errno : 0; break;
          case 5: rc = mkdir(name().c_str(), 0755) ? errno : 0; break;
          case 6: rc = rmdir(name().c_str()) ? errno : 0; break;
        }
        // Races with other threads make these legitimate outcomes.
        if (rc != 0 && rc != ENOENT && rc != EEXIST && rc != EISDIR && rc != ENOTDIR && rc != ENOTEMPTY &&
            rc != EPERM) {
          fprintf(stderr, "stress: unexpected errno %d (%s)\n", rc, std::strerror(rc));
          unexpected++;
        }
        done_ops++;
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(done_ops == kThreads * kOps);
  REQUIRE(unexpected == 0);
  CheckTree(m.mnt());
  // The same holds for what is on disk after a remount.
  REQUIRE(m.Stop() == 0);
  m.Start();
  CheckTree(m.mnt());
}
