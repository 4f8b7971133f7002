// ScratchDir: a fresh mkdtemp directory under /tmp for one test, removed with
// everything in it when the test ends.
//
// Thread-safety: a value owned by one test.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace mxfs {

class ScratchDir {
 public:
  explicit ScratchDir(const char* base = "/tmp") {
    std::string tmpl = std::string(base) + "/mxfs-ssd-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace mxfs
