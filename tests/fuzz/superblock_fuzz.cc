// libFuzzer target: superblock (see drivers_fuse.h for the input format).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/drivers_fuse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mxfs::fuzz::RunSuperblock(data, size).IgnoreError();  // only crashes, leaks and UB count here
  return 0;
}
