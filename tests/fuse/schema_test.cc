#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "fuse/schema.h"
#include "fuse/superblock.h"

using namespace mxfs;

TEST_CASE("Schema: inode keys sort numerically by ino", "[fuse][schema]") {
  REQUIRE(InodeKey(1) < InodeKey(2));
  REQUIRE(InodeKey(255) < InodeKey(256));
  REQUIRE(InodeKey(0xFFFF) < InodeKey(0x10000));
  REQUIRE(InodeKey(7).size() == 9);
  REQUIRE(InodeKey(7)[0] == 'I');
  REQUIRE(KeyIno(InodeKey(123456789)) == 123456789);
}

TEST_CASE("Schema: a directory's entries share its prefix and sort by name", "[fuse][schema]") {
  std::string prefix = DentryPrefix(42);
  REQUIRE(Slice(DentryKey(42, "a")).starts_with(prefix));
  REQUIRE(Slice(DentryKey(42, "zzz")).starts_with(prefix));
  REQUIRE_FALSE(Slice(DentryKey(43, "a")).starts_with(prefix));
  REQUIRE(DentryKey(42, "a") < DentryKey(42, "b"));
  REQUIRE(DentryKey(42, "zzz") < DentryKey(43, ""));
  REQUIRE(KeyName(DentryKey(42, "hello")) == Slice("hello"));
}

TEST_CASE("Schema: block keys sort by block number within an inode", "[fuse][schema]") {
  REQUIRE(BlockKey(5, 1) < BlockKey(5, 2));
  REQUIRE(BlockKey(5, 255) < BlockKey(5, 256));
  REQUIRE(BlockKey(5, 1000000) < BlockKey(6, 0));
  REQUIRE(BlockKeyBlock(BlockKey(9, 77)) == 77);
  REQUIRE(KeyIno(BlockKey(9, 77)) == 9);
  REQUIRE(Slice(BlockKey(9, 3)).starts_with(BlockPrefix(9)));
}

TEST_CASE("Schema: tags keep record kinds apart", "[fuse][schema]") {
  REQUIRE(XattrKey(3, "user.a")[0] == 'X');
  REQUIRE(OrphanKey(3)[0] == 'O');
  REQUIRE(SystemKey("next_ino") == "Snext_ino");
  REQUIRE(KeyName(XattrKey(3, "user.a")) == Slice("user.a"));
}

TEST_CASE("Schema: inode attributes round-trip", "[fuse][schema]") {
  InodeAttr a;
  a.mode = S_IFLNK | 0777;
  a.uid = 1000;
  a.gid = 100;
  a.nlink = 3;
  a.flags = 0;
  a.size = 1ull << 40;
  a.atime_ns = 1;
  a.mtime_ns = -5;  // before the epoch
  a.ctime_ns = 1700000000123456789;
  a.crtime_ns = 42;
  a.rdev = 0x0801;
  a.generation = 9;
  a.parent = 77;
  a.storage = Storage::kObject;
  a.symlink = "../target/with/a/path";
  std::string v = EncodeInodeAttr(a);
  REQUIRE(v.size() == kInodeAttrFixedSize + 1 + a.symlink.size());
  InodeAttr b;
  REQUIRE(DecodeInodeAttr(1, v, &b).ok());
  REQUIRE(b.mode == a.mode);
  REQUIRE(b.uid == a.uid);
  REQUIRE(b.gid == a.gid);
  REQUIRE(b.nlink == a.nlink);
  REQUIRE(b.size == a.size);
  REQUIRE(b.atime_ns == a.atime_ns);
  REQUIRE(b.mtime_ns == a.mtime_ns);
  REQUIRE(b.ctime_ns == a.ctime_ns);
  REQUIRE(b.crtime_ns == a.crtime_ns);
  REQUIRE(b.rdev == a.rdev);
  REQUIRE(b.generation == a.generation);
  REQUIRE(b.parent == a.parent);
  REQUIRE(b.storage == Storage::kObject);
  REQUIRE(b.symlink == a.symlink);
  REQUIRE(b.IsSymlink());
}

TEST_CASE("Schema: malformed inode records are Corruption naming the inode", "[fuse][schema]") {
  InodeAttr a;
  a.mode = S_IFREG | 0644;
  std::string v = EncodeInodeAttr(a);
  InodeAttr b;
  Status s = DecodeInodeAttr(99, Slice(v.data(), 50), &b);
  REQUIRE(s.IsCorruption());
  REQUIRE(std::string(s.message()).find("inode 99") != std::string::npos);
  std::string bad = v;
  bad[0] = 7;  // version
  REQUIRE(DecodeInodeAttr(99, bad, &b).IsCorruption());
  bad = v;
  bad[1] = 5;  // storage kind
  REQUIRE(DecodeInodeAttr(99, bad, &b).IsCorruption());
  bad = v + "x";  // trailing garbage
  REQUIRE(DecodeInodeAttr(99, bad, &b).IsCorruption());
}

TEST_CASE("Schema: directory entries round-trip and reject bad sizes", "[fuse][schema]") {
  std::string v = EncodeDirEntry(DirEntry{123, 4});
  DirEntry e;
  REQUIRE(DecodeDirEntry("k", v, &e).ok());
  REQUIRE(e.ino == 123);
  REQUIRE(e.type == 4);
  REQUIRE(DecodeDirEntry("k", Slice(v.data(), 8), &e).IsCorruption());
  REQUIRE(ModeToDirType(S_IFDIR | 0755) == DT_DIR);
  REQUIRE(ModeToDirType(S_IFREG) == DT_REG);
}

TEST_CASE("Superblock: round-trips through its 512-byte encoding", "[fuse][superblock]") {
  Superblock sb = Superblock::New();
  sb.label = "scratch";
  sb.inline_limit = 8192;
  sb.block_size = 1024;
  sb.pool_path = "/dev/shm/pool";
  sb.pool_size = 1ull << 30;
  std::string enc = EncodeSuperblock(sb);
  REQUIRE(enc.size() == kSuperblockSize);
  Superblock out;
  REQUIRE(DecodeSuperblock(enc, "test", &out).ok());
  REQUIRE(std::memcmp(out.uuid, sb.uuid, 16) == 0);
  REQUIRE(out.create_time_ns == sb.create_time_ns);
  REQUIRE(out.label == "scratch");
  REQUIRE(out.inline_limit == 8192);
  REQUIRE(out.block_size == 1024);
  REQUIRE(out.pool_path == "/dev/shm/pool");
  REQUIRE(out.pool_size == (1ull << 30));
  REQUIRE(out.UuidString().size() == 36);
}

TEST_CASE("Superblock: a flipped byte is caught by the checksum", "[fuse][superblock]") {
  std::string enc = EncodeSuperblock(Superblock::New());
  enc[200] ^= 1;
  Superblock out;
  Status s = DecodeSuperblock(enc, "/x/superblock", &out);
  REQUIRE(s.IsCorruption());
  REQUIRE(std::string(s.message()).find("checksum") != std::string::npos);
  REQUIRE(std::string(s.message()).find("/x/superblock") != std::string::npos);
  std::string foreign(kSuperblockSize, 'Z');
  REQUIRE(DecodeSuperblock(foreign, "f", &out).IsCorruption());
}

TEST_CASE("Superblock: invalid geometry is rejected", "[fuse][superblock]") {
  Superblock sb = Superblock::New();
  sb.block_size = 3000;
  REQUIRE(ValidateSuperblock(sb).IsInvalidArgument());
  sb.block_size = 4096;
  sb.inline_limit = 1u << 30;
  REQUIRE(ValidateSuperblock(sb).IsInvalidArgument());
}

TEST_CASE("Superblock: written and read back from a data directory", "[fuse][superblock]") {
  char tmpl[] = "/tmp/mxfs-sb-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  auto missing = ReadSuperblock(dir);
  REQUIRE_FALSE(missing.has_value());
  REQUIRE(std::string(missing.error().message()).find("not a MatrixFS instance") != std::string::npos);
  Superblock sb = Superblock::New();
  sb.label = "disk";
  REQUIRE(WriteSuperblock(dir, sb).ok());
  auto back = ReadSuperblock(dir);
  REQUIRE(back.has_value());
  REQUIRE(back->label == "disk");
  REQUIRE(std::memcmp(back->uuid, sb.uuid, 16) == 0);
  unlink(SuperblockPath(dir).c_str());
  rmdir(dir.c_str());
}
