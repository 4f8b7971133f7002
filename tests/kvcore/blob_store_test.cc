// BlobStore: resolves blob indexes through a bounded set of open blob files.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kvcore/blob_store.h"
#include "kvcore/filename.h"
#include "ssd/blob_file.h"
#include "tests/kvcore/test_util.h"

using namespace mxfs;
using mxfs::testing::TempDir;

namespace {

// Writes blob file `number` holding one record (key, value); returns its index.
std::string WriteBlob(const DbContext& ctx, uint64_t number, const std::string& key, const std::string& value) {
  auto file = ctx.fs->NewWritableFile(BlobFileName(ctx.dbname, number));
  REQUIRE(file);
  BlobFileBuilder b(file->get());
  BlobIndex bi;
  bi.file_number = number;
  bi.value_size = value.size();
  REQUIRE(b.Add(key, value, &bi.offset).ok());
  REQUIRE(b.Finish().ok());
  REQUIRE((*file)->Sync().ok());
  REQUIRE((*file)->Close().ok());
  std::string index;
  bi.EncodeTo(&index);
  return index;
}

}  // namespace

TEST_CASE("BlobStore: keeps at most its limit of files open and still reads every file") {
  TempDir dir;
  DbContext ctx(BytewiseComparator());
  ctx.dbname = dir.path();
  ctx.fs = DefaultFileSystem();
  BlobStore store(&ctx, 2);
  std::vector<std::string> indexes;
  for (uint64_t n = 1; n <= 5; n++) {
    indexes.push_back(WriteBlob(ctx, n, "key" + std::to_string(n), std::string(3000, static_cast<char>('a' + n))));
  }
  for (int round = 0; round < 3; round++) {
    for (uint64_t n = 1; n <= 5; n++) {
      std::string value;
      REQUIRE(store.Read("key" + std::to_string(n), indexes[n - 1], &value).ok());
      CHECK(value == std::string(3000, static_cast<char>('a' + n)));
      CHECK(store.OpenFiles() <= 2);
    }
  }
  store.Evict(5);
  CHECK(store.OpenFiles() == 1);
  std::string value;
  Status s = store.Read("key2", indexes[0], &value);  // file 1's index under another key
  CHECK(s.IsCorruption());
  CHECK(s.ToString().find("000001.blob") != std::string::npos);
  s = store.Read("key9", "\xff", &value);
  CHECK(s.IsCorruption());
  CHECK(s.ToString().find("malformed blob index") != std::string::npos);
}
