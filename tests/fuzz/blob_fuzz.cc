// libFuzzer target: blob (see drivers_ssd.h for the input format).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/drivers_ssd.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mxfs::fuzz::RunBlob(data, size).IgnoreError();  // only crashes, leaks and UB count here
  return 0;
}
