// Replays the fuzz seed corpus and the kept crashing inputs of the
// filesystem's decoders (superblock, key schema) through the drivers the
// libFuzzer targets use, in the normal g++ build.
#include <catch2/catch.hpp>

#include "tests/fuzz/drivers_fuse.h"

using namespace mxfs;
using namespace mxfs::fuzz;

TEST_CASE("Fuzz corpus: superblock seeds decode cleanly and schema seeds replay") {
  const std::string dir = FuzzDir(__FILE__);
  auto sbs = ReadInputs(dir + "/corpus/superblock");
  REQUIRE_FALSE(sbs.empty());
  for (const auto& [name, bytes] : sbs) {
    INFO(name);
    CHECK(RunSuperblock(Bytes(bytes), bytes.size()).ok());
  }
  auto schema = ReadInputs(dir + "/corpus/schema");
  REQUIRE_FALSE(schema.empty());
  size_t inodes = 0;
  for (const auto& [name, bytes] : schema) {
    INFO(name);
    // Each seed is a key and its value: an inode seed's value is a valid
    // inode record, the others' are not (and must fail cleanly, not crash).
    Status s = RunSchema(Bytes(bytes), bytes.size());
    if (name.find("inode") != std::string::npos) {
      REQUIRE(bytes.size() >= 2);
      InodeAttr a;
      const size_t klen = static_cast<uint8_t>(bytes[1]);
      CHECK(DecodeInodeAttr(17, Slice(bytes.data() + 2 + klen, bytes.size() - 2 - klen), &a).ok());
      inodes++;
    } else {
      (void)s;
    }
  }
  CHECK(inodes == 2);
}
