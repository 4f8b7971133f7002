#include "kvcore/filename.h"

#include <cstdio>
#include <cstdlib>

namespace mxfs {

namespace {
std::string Numbered(const std::string& dbname, uint64_t number, const char* suffix) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "/%06llu.%s", static_cast<unsigned long long>(number), suffix);
  return dbname + buf;
}
bool ParseNumber(const std::string& s, uint64_t* number) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *number = v;
  return true;
}
}  // namespace

std::string LogFileName(const std::string& dbname, uint64_t number) { return Numbered(dbname, number, "log"); }
std::string TableFileName(const std::string& dbname, uint64_t number) { return Numbered(dbname, number, "sst"); }
std::string BlobFileName(const std::string& dbname, uint64_t number) { return Numbered(dbname, number, "blob"); }
std::string ManifestFileName(const std::string& dbname, uint64_t number) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "/MANIFEST-%06llu", static_cast<unsigned long long>(number));
  return dbname + buf;
}
std::string CurrentFileName(const std::string& dbname) { return dbname + "/CURRENT"; }
std::string LockFileName(const std::string& dbname) { return dbname + "/LOCK"; }

bool ParseFileName(const std::string& name, uint64_t* number, FileType* type) {
  if (name == "CURRENT") {
    *number = 0;
    *type = FileType::kCurrent;
    return true;
  }
  if (name == "LOCK") {
    *number = 0;
    *type = FileType::kLock;
    return true;
  }
  if (name.rfind("MANIFEST-", 0) == 0) {
    *type = FileType::kManifest;
    return ParseNumber(name.substr(9), number);
  }
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return false;
  const std::string suffix = name.substr(dot + 1);
  if (suffix == "log") *type = FileType::kLog;
  else if (suffix == "sst") *type = FileType::kTable;
  else if (suffix == "blob") *type = FileType::kBlob;
  else return false;
  return ParseNumber(name.substr(0, dot), number);
}

}  // namespace mxfs
