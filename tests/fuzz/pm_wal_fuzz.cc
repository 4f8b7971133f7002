// libFuzzer target: pm_wal (see drivers_nvm.h for the input format).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/drivers_nvm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mxfs::fuzz::RunPmWal(data, size).IgnoreError();  // only crashes, leaks and UB count here
  return 0;
}
