// libFuzzer target: log_reader (see drivers_kvcore.h for the input format).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/drivers_kvcore.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mxfs::fuzz::RunLogReader(data, size).IgnoreError();  // only crashes, leaks and UB count here
  return 0;
}
