#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

#include "ssd/fault_injection_fs.h"
#include "ssd/table.h"
#include "tests/ssd/scratch_dir.h"

using namespace mxfs;

namespace {

std::string Contents(const std::string& path) {
  auto r = ReadFileToString(DefaultFileSystem(), path);
  REQUIRE(r.has_value());
  return *r;
}

void Write(FileSystem* fs, const std::string& path, const std::string& data, bool sync) {
  auto f = fs->NewWritableFile(path);
  REQUIRE(f.has_value());
  REQUIRE((*f)->Append(data).ok());
  if (sync) REQUIRE((*f)->Sync().ok());
  REQUIRE((*f)->Close().ok());
}

}  // namespace

TEST_CASE("FaultInjectionFS: unsynced appends are dropped, synced data is kept") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  const std::string path = dir.File("MANIFEST-000001");
  auto f = fs.NewWritableFile(path);
  REQUIRE(f.has_value());
  REQUIRE((*f)->Append("synced-part|").ok());
  REQUIRE((*f)->Sync().ok());
  REQUIRE(fs.SyncDir(dir.path()).ok());
  REQUIRE((*f)->Append("flushed-but-not-synced").ok());
  REQUIRE((*f)->Flush().ok());
  CHECK(Contents(path) == "synced-part|flushed-but-not-synced");
  fs.SetFilesystemActive(false);
  f->reset();  // the dying process drops its handle
  REQUIRE(fs.DropUnsyncedData().ok());
  fs.SetFilesystemActive(true);
  CHECK(Contents(path) == "synced-part|");
}

TEST_CASE("FaultInjectionFS: a new file whose directory was not synced vanishes") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  Write(&fs, dir.File("000005.sst"), "table bytes", /*sync=*/true);  // data synced, entry not
  Write(&fs, dir.File("000006.log"), "log", /*sync=*/false);
  CHECK(fs.NumUnsyncedDirEntries() == 2);
  REQUIRE(fs.DropUnsyncedData().ok());
  CHECK_FALSE(DefaultFileSystem()->FileExists(dir.File("000005.sst")));
  CHECK_FALSE(DefaultFileSystem()->FileExists(dir.File("000006.log")));

  // With SyncDir the entry survives, with exactly the synced bytes.
  Write(&fs, dir.File("000007.sst"), "kept", /*sync=*/true);
  REQUIRE(fs.SyncDir(dir.path()).ok());
  CHECK(fs.NumUnsyncedDirEntries() == 0);
  REQUIRE(fs.DropUnsyncedData().ok());
  CHECK(Contents(dir.File("000007.sst")) == "kept");

  // Entry synced but data not: the file survives, empty.
  Write(&fs, dir.File("000008.sst"), "lost", /*sync=*/false);
  REQUIRE(fs.SyncDir(dir.path()).ok());
  REQUIRE(fs.DropUnsyncedData().ok());
  CHECK(DefaultFileSystem()->FileExists(dir.File("000008.sst")));
  CHECK(Contents(dir.File("000008.sst")).empty());
}

TEST_CASE("FaultInjectionFS: an unsynced rename over CURRENT is undone") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  REQUIRE(WriteFileAtomic(&fs, dir.File("CURRENT"), "MANIFEST-000001\n").ok());
  CHECK(fs.NumUnsyncedDirEntries() == 0);  // WriteFileAtomic syncs the directory
  // The same steps without the final directory sync.
  Write(&fs, dir.File("CURRENT.tmp"), "MANIFEST-000002\n", /*sync=*/true);
  REQUIRE(fs.RenameFile(dir.File("CURRENT.tmp"), dir.File("CURRENT")).ok());
  CHECK(Contents(dir.File("CURRENT")) == "MANIFEST-000002\n");
  REQUIRE(fs.DropUnsyncedData().ok());
  CHECK(Contents(dir.File("CURRENT")) == "MANIFEST-000001\n");
  CHECK_FALSE(DefaultFileSystem()->FileExists(dir.File("CURRENT.tmp")));  // its creation was not synced either
}

TEST_CASE("FaultInjectionFS: an unsynced removal is undone with the synced contents") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  Write(&fs, dir.File("000003.sst"), "old table", true);
  REQUIRE(fs.SyncDir(dir.path()).ok());
  REQUIRE(fs.RemoveFile(dir.File("000003.sst")).ok());
  CHECK_FALSE(DefaultFileSystem()->FileExists(dir.File("000003.sst")));
  REQUIRE(fs.DropUnsyncedData().ok());
  CHECK(Contents(dir.File("000003.sst")) == "old table");
  // A synced removal stays removed.
  REQUIRE(fs.RemoveFile(dir.File("000003.sst")).ok());
  REQUIRE(fs.SyncDir(dir.path()).ok());
  REQUIRE(fs.DropUnsyncedData().ok());
  CHECK_FALSE(DefaultFileSystem()->FileExists(dir.File("000003.sst")));
}

TEST_CASE("FaultInjectionFS: handles from before the crash cannot write afterwards") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  Write(&fs, dir.File("log"), "", true);
  REQUIRE(fs.SyncDir(dir.path()).ok());
  auto f = fs.NewAppendableFile(dir.File("log"));
  REQUIRE(f.has_value());
  REQUIRE((*f)->Append("buffered").ok());
  REQUIRE(fs.DropUnsyncedData().ok());
  Status s = (*f)->Append("more");
  CHECK(s.IsIOError());
  CHECK(s.message().find(dir.File("log")) != std::string_view::npos);
  f->reset();  // destroying it must not write the buffered bytes
  CHECK(Contents(dir.File("log")).empty());
}

TEST_CASE("FaultInjectionFS: injected EIO and ENOSPC surface as IOError and NoSpace") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  auto f = fs.NewWritableFile(dir.File("data"));
  REQUIRE(f.has_value());
  fs.FailAfter(FaultOp::kWrite, 2, EIO);
  CHECK((*f)->Append("1").ok());
  CHECK((*f)->Append("2").ok());
  Status s = (*f)->Append("3");
  CHECK(s.IsIOError());
  CHECK(s.err() == EIO);
  CHECK(s.message().find(dir.File("data")) != std::string_view::npos);
  CHECK((*f)->Append("4").IsIOError());  // stays failed until cleared
  fs.ClearFaults();
  CHECK((*f)->Append("5").ok());

  fs.FailAfter(FaultOp::kSync, 0, ENOSPC, /*one_shot=*/true);
  s = (*f)->Sync();
  CHECK(s.IsNoSpace());
  CHECK((*f)->Sync().ok());  // one shot
  CHECK(fs.InjectedFaults() == 3);
  REQUIRE((*f)->Close().ok());
  CHECK(Contents(dir.File("data")) == "125");

  fs.FailAfter(FaultOp::kRename, 0, EIO);
  CHECK(fs.RenameFile(dir.File("data"), dir.File("other")).IsIOError());
  CHECK(DefaultFileSystem()->FileExists(dir.File("data")));
  fs.FailAfter(FaultOp::kOpen, 0, ENOSPC);
  auto g = fs.NewWritableFile(dir.File("new"));
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().IsNoSpace());
  fs.FailAfter(FaultOp::kRead, 0, EIO);
  fs.ClearFaults();
  fs.FailAfter(FaultOp::kRead, 1, EIO);
  auto r = fs.NewRandomAccessFile(dir.File("data"));
  REQUIRE(r.has_value());
  char buf[8];
  Slice got;
  CHECK((*r)->Read(0, 3, &got, buf).ok());
  CHECK((*r)->Read(0, 3, &got, buf).IsIOError());
}

TEST_CASE("FaultInjectionFS: an inactive filesystem fails every write but still reads") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  Write(&fs, dir.File("a"), "alpha", true);
  fs.SetFilesystemActive(false);
  CHECK_FALSE(fs.IsFilesystemActive());
  CHECK_FALSE(fs.NewWritableFile(dir.File("b")).has_value());
  CHECK(fs.RenameFile(dir.File("a"), dir.File("c")).IsIOError());
  CHECK(fs.RemoveFile(dir.File("a")).IsIOError());
  CHECK(fs.SyncDir(dir.path()).IsIOError());
  CHECK(fs.CreateDir(dir.File("d")).IsIOError());
  auto r = ReadFileToString(&fs, dir.File("a"));
  REQUIRE(r.has_value());
  CHECK(*r == "alpha");
  fs.SetFilesystemActive(true);
  CHECK(fs.RemoveFile(dir.File("a")).ok());
}

TEST_CASE("FaultInjectionFS: random-rw overwrites and truncation after the last sync are undone") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  auto f = fs.NewRandomRWFile(dir.File("obj"), true);
  REQUIRE(f.has_value());
  REQUIRE((*f)->Write(0, "0123456789").ok());
  REQUIRE((*f)->Sync().ok());
  REQUIRE(fs.SyncDir(dir.path()).ok());
  REQUIRE((*f)->Write(2, "ab").ok());
  REQUIRE((*f)->Write(8, "XYZW").ok());  // overwrites 8..9 and extends
  REQUIRE((*f)->Truncate(5).ok());
  REQUIRE((*f)->Write(20, "far").ok());
  f->reset();
  REQUIRE(fs.DropUnsyncedData().ok());
  CHECK(Contents(dir.File("obj")) == "0123456789");
}

TEST_CASE("FaultInjectionFS: a table survives the crash only if file and directory were synced") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem());
  auto build = [&](const std::string& path, bool sync) {
    auto f = fs.NewWritableFile(path);
    REQUIRE(f.has_value());
    TableBuilder b(TableOptions{}, f->get());
    for (int i = 0; i < 1000; i++) b.Add("key" + std::to_string(100000 + i), std::string(100, 'v'));
    REQUIRE(b.Finish().ok());
    if (sync) REQUIRE((*f)->Sync().ok());
    REQUIRE((*f)->Close().ok());
  };
  build(dir.File("000010.sst"), true);
  REQUIRE(fs.SyncDir(dir.path()).ok());
  build(dir.File("000011.sst"), false);
  REQUIRE(fs.SyncDir(dir.path()).ok());  // entry durable, data not
  REQUIRE(fs.DropUnsyncedData().ok());
  auto open = [&](const std::string& path) {
    auto file = fs.NewRandomAccessFile(path);
    REQUIRE(file.has_value());
    auto size = fs.GetFileSize(path);
    REQUIRE(size.has_value());
    return Table::Open(TableOptions{}, std::move(*file), *size, 1);
  };
  auto good = open(dir.File("000010.sst"));
  REQUIRE(good.has_value());
  CHECK((*good)->VerifyAll().ok());
  auto lost = open(dir.File("000011.sst"));
  REQUIRE_FALSE(lost.has_value());
  CHECK(lost.error().IsCorruption());
}

TEST_CASE("FaultInjectionFS: a path filter fails only the matching files, each rule counting its own") {
  // On both backends: the io_uring path and the pread/pwrite fallback.
  const bool fallback = GENERATE(false, true);
  SetIoUringDisabledForTesting(fallback);
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem(), /*track_unsynced=*/false);
  fs.FailAfterMatching(FaultOp::kWrite, 1, ENOSPC, false, ".sst");
  fs.FailAfterMatching(FaultOp::kWrite, 0, EIO, true, "/obj-");
  auto log = fs.NewWritableFile(dir.File("000003.log"));
  auto sst = fs.NewWritableFile(dir.File("000004.sst"));
  REQUIRE(log.has_value());
  REQUIRE(sst.has_value());
  CHECK((*log)->Append("a").ok());
  CHECK((*sst)->Append("b").ok());  // the one allowed through
  CHECK((*log)->Append("c").ok());
  Status s = (*sst)->Append("d");
  CHECK(s.IsNoSpace());
  CHECK(s.err() == ENOSPC);
  CHECK(s.message().find("000004.sst") != std::string_view::npos);
  CHECK((*log)->Append("e").ok());
  REQUIRE((*log)->Close().ok());
  CHECK(Contents(dir.File("000003.log")) == "ace");  // error-only mode: no buffering

  auto obj = fs.NewRandomRWFile(dir.File("obj-7"), true);
  REQUIRE(obj.has_value());
  s = (*obj)->Write(0, "x");
  CHECK(s.IsIOError());
  CHECK(s.err() == EIO);
  CHECK((*obj)->Write(0, "y").ok());  // one shot
  CHECK(fs.InjectedFaults() == 2);
  CHECK(fs.DescribeFaults() == "write:enospc:after=0:path=.sst\n");
  CHECK(fs.DropUnsyncedData().IsNotSupported());
  fs.ClearFaults();
  CHECK((*sst)->Append("f").ok());
  CHECK(fs.DescribeFaults().empty());
  SetIoUringDisabledForTesting(false);
}

TEST_CASE("FaultInjectionFS: error-only mode removes and renames without reading the files") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem(), /*track_unsynced=*/false);
  Write(&fs, dir.File("a"), "alpha", false);
  REQUIRE(fs.RenameFile(dir.File("a"), dir.File("b")).ok());
  CHECK(fs.NumUnsyncedDirEntries() == 0);
  fs.FailAfterMatching(FaultOp::kRemove, 0, EIO, false, "/b");
  CHECK(fs.RemoveFile(dir.File("b")).IsIOError());
  CHECK(Contents(dir.File("b")) == "alpha");
  fs.ClearFaults();
  CHECK(fs.RemoveFile(dir.File("b")).ok());
  CHECK_FALSE(DefaultFileSystem()->FileExists(dir.File("b")));
}

TEST_CASE("FaultInjectionFS: fault specs parse, print back and reject bad rules by name") {
  auto specs = ParseFaultSpecs("write:eio:after=3:path=.sst; sync:enospc:oneshot\nread:delay:ms=5:path=MANIFEST");
  REQUIRE(specs.has_value());
  REQUIRE(specs->size() == 3);
  CHECK((*specs)[0].op == FaultOp::kWrite);
  CHECK((*specs)[0].err == EIO);
  CHECK((*specs)[0].after == 3);
  CHECK((*specs)[0].path == ".sst");
  CHECK((*specs)[1].ToString() == "sync:enospc:after=0:oneshot");
  CHECK((*specs)[2].err == 0);
  CHECK((*specs)[2].delay_ms == 5);
  CHECK((*specs)[2].ToString() == "read:delay:after=0:path=MANIFEST:ms=5");
  CHECK(ParseFaultSpecs("").has_value());
  CHECK(ParseFaultSpecs("")->empty());
  for (const char* bad : {"write", "scribble:eio", "write:ebadf", "write:eio:after=x", "write:eio:path=",
                          "write:eio:ms=5", "write:eio:sometimes"}) {
    auto r = ParseFaultSpecs(bad);
    INFO(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().IsInvalidArgument());
    CHECK(r.error().message().find(bad) != std::string_view::npos);
  }
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem(), false);
  REQUIRE(fs.ArmFromSpec("open:enospc:path=never-matches").ok());
  CHECK_FALSE(fs.ArmFromSpec("open:bogus").ok());
  CHECK(fs.DescribeFaults() == "open:enospc:after=0:path=never-matches\n");  // a bad spec changes nothing
  REQUIRE(fs.ArmFromSpec("open:enospc").ok());
  auto f = fs.NewWritableFile(dir.File("x"));
  REQUIRE_FALSE(f.has_value());
  CHECK(f.error().IsNoSpace());
}

TEST_CASE("FaultInjectionFS: a delay rule slows the matching operation and lets it succeed") {
  ScratchDir dir;
  FaultInjectionFileSystem fs(DefaultFileSystem(), false);
  REQUIRE(fs.ArmFromSpec("write:delay:ms=1:path=slow").ok());
  auto f = fs.NewWritableFile(dir.File("slow"));
  REQUIRE(f.has_value());
  CHECK((*f)->Append("data").ok());
  REQUIRE((*f)->Close().ok());
  CHECK(Contents(dir.File("slow")) == "data");
  CHECK(fs.InjectedFaults() == 0);  // a delay is not a failure
}
