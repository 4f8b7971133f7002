#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "ssd/file_system.h"
#include "tests/ssd/scratch_dir.h"

using namespace mxfs;

namespace {

// Writes and reads back one file through fs; returns true if the bytes match.
bool RoundTrip(FileSystem* fs, const std::string& path, const std::string& data) {
  auto w = fs->NewWritableFile(path);
  if (!w) return false;
  if (!(*w)->Append(data).ok() || !(*w)->Sync().ok() || !(*w)->Close().ok()) return false;
  auto r = fs->NewRandomAccessFile(path);
  if (!r) return false;
  std::string scratch(data.size(), '\0');
  Slice got;
  if (!(*r)->Read(0, data.size(), &got, scratch.data()).ok()) return false;
  return got == Slice(data);
}

}  // namespace

TEST_CASE("IoRing: a forked child gets its own ring and the parent's keeps working") {
  if (!IoUringAvailable()) {
    WARN("io_uring is not available here; the fork case only concerns the io_uring backend");
    return;
  }
  ScratchDir dir;
  REQUIRE(!dir.path().empty());
  FileSystem* fs = DefaultFileSystem();
  // The parent's thread makes its ring now.
  REQUIRE(RoundTrip(fs, dir.File("parent-before"), std::string(100000, 'p')));

  for (int round = 0; round < 3; round++) {
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Same thread, forked: it must not use the parent's ring.
      bool ok = RoundTrip(fs, dir.File("child-" + std::to_string(round)), std::string(300000, 'c'));
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    // And the parent's ring still completes its own I/O afterwards.
    CHECK(RoundTrip(fs, dir.File("parent-after-" + std::to_string(round)), std::string(200000, 'q')));
  }
}
