// fsck.matrixfs and the MANIFEST's per-table blob references (tag 11,
// kvcore/version_edit.h): an instance whose file data went to blob files
// checks clean, and a table whose reference list leaves out a blob file it
// points into is named (blob garbage collection would never rewrite it for
// that file).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "kvcore/filename.h"
#include "kvcore/include/file_system.h"
#include "kvcore/log_reader.h"
#include "kvcore/log_writer.h"
#include "kvcore/version_edit.h"
#include "tests/fuse/mount_fixture.h"

namespace {

using mxfs_test::BinDir;
using mxfs_test::MountFixture;

std::pair<int, std::string> Fsck(const std::string& datadir) {
  return mxfs_test::RunShell("'" + BinDir() + "/fsck.matrixfs' -n '" + datadir + "'");
}

int Control(const MountFixture& m, const std::string& cmd) {
  const int fd = open(m.P(".matrixfs/control").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  const ssize_t n = write(fd, cmd.data(), cmd.size());
  close(fd);
  return n == static_cast<ssize_t>(cmd.size()) ? 0 : -1;
}

size_t BlobFiles(const std::string& kv) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kv)) n += e.path().extension() == ".blob" ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("fsck: blob references in the MANIFEST check clean; a table's list missing a file it points into is named") {
  MountFixture m;
  // Small files keep their 4 KiB data blocks in the engine: values that a
  // compaction separates into blob files.
  for (int i = 0; i < 12; i++) {
    REQUIRE(mxfs_test::WriteAll(m.P("f" + std::to_string(i)), std::string(40000, static_cast<char>('a' + i))));
  }
  REQUIRE(Control(m, "compact") == 0);
  for (int i = 0; i < 6; i++) {  // overwrites: garbage, and GC relocation at the next compact
    REQUIRE(mxfs_test::WriteAll(m.P("f" + std::to_string(i)), std::string(40000, static_cast<char>('A' + i))));
  }
  REQUIRE(Control(m, "compact") == 0);
  REQUIRE(m.Stop() == 0);
  const std::string kv = m.datadir() + "/kv";
  REQUIRE(BlobFiles(kv) > 0);
  {
    auto [rc, out] = Fsck(m.datadir());
    INFO(out);
    CHECK(rc == 0);
  }

  // Drop the blob references of every table that has some (tag 11 with an
  // empty list: "points into no blob file").
  mxfs::FileSystem* fs = mxfs::DefaultFileSystem();
  const std::string current = mxfs_test::ReadAll(kv + "/CURRENT");
  REQUIRE(current.size() > 1);
  size_t emptied = 0;
  {
    auto in = fs->NewSequentialFile(kv + "/" + current.substr(0, current.size() - 1));
    REQUIRE(in.has_value());
    mxfs::LogReader reader(std::move(*in));
    auto out = fs->NewWritableFile(mxfs::ManifestFileName(kv, 900000));
    REQUIRE(out.has_value());
    mxfs::LogWriter writer(std::move(*out));
    mxfs::Slice record;
    std::string scratch;
    while (reader.ReadRecord(&record, &scratch)) {
      mxfs::VersionEdit e;
      REQUIRE(e.DecodeFrom(record).ok());
      mxfs::VersionEdit w;
      if (e.comparator()) w.SetComparatorName(*e.comparator());
      if (e.log_number()) w.SetLogNumber(*e.log_number());
      if (e.next_file_number()) w.SetNextFile(*e.next_file_number());
      if (e.last_sequence()) w.SetLastSequence(*e.last_sequence());
      if (e.level0_state()) w.SetLevel0State(*e.level0_state());
      for (const auto& [level, key] : e.compact_pointers()) w.SetCompactPointer(level, key);
      for (const auto& [level, number] : e.deleted_files()) w.RemoveFile(level, number);
      for (const auto& [level, f] : e.new_files()) {
        mxfs::FileMetaData g = f;
        if (g.blob_refs_known && !g.blob_refs.empty()) {
          g.blob_refs.clear();
          emptied++;
        }
        w.AddFile(level, g);
      }
      for (const mxfs::BlobFileMeta& b : e.new_blob_files()) w.AddBlobFile(b);
      for (const auto& [number, g] : e.blob_garbage()) w.AddBlobGarbage(number, g);
      std::string enc;
      w.EncodeTo(&enc);
      REQUIRE(writer.AddRecord(enc, false).ok());
    }
    REQUIRE(reader.status().ok());
    REQUIRE(writer.Close().ok());
  }
  REQUIRE(emptied > 0);
  REQUIRE(mxfs_test::WriteAll(kv + "/CURRENT", "MANIFEST-900000\n"));
  auto [rc, out] = Fsck(m.datadir());
  INFO(out);
  CHECK(rc == 4);
  const std::string needle = "blob-reference list for the table does not name";
  const size_t first = out.find(needle);
  CHECK(first != std::string::npos);
  CHECK(out.find(".blob") != std::string::npos);
  // Once per table and blob file, not once per key: fewer reports than the
  // 4 KiB blocks written (12 files of 10 blocks, 6 rewritten).
  size_t reports = 0;
  for (size_t at = first; at != std::string::npos; at = out.find(needle, at + 1)) reports++;
  CHECK(reports <= emptied * BlobFiles(kv));
}
