// Helpers shared by the kvcore tests that drive a whole DB: open it or fail
// the test naming the error, and read one counter of its stats.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "kvcore/include/db.h"
#include "kvcore/include/options.h"

namespace mxfs::testing {

inline std::unique_ptr<DB> OpenDb(const Options& o, const std::string& path) {
  auto db = DB::Open(o, path);
  if (!db) FAIL("open " << path << ": " << db.error().ToString());
  return std::move(*db);
}

// One number from the "matrixkv.stats" property ("name value" lines).
inline uint64_t Stat(DB* db, const std::string& name) {
  std::string stats;
  REQUIRE(db->GetProperty("matrixkv.stats", &stats));
  const std::string needle = "\n" + name + " ";
  const size_t at = ("\n" + stats).find(needle);
  INFO(stats);
  REQUIRE(at != std::string::npos);
  return std::stoull(stats.substr(at + needle.size() - 1));
}

}  // namespace mxfs::testing
