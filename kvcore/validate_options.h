// ValidateOptions: the checks DB::Open makes on Options before it touches
// anything.
//
// Thread-safety: a pure function.
#pragma once

#include "base/status.h"
#include "kvcore/include/options.h"

namespace mxfs {

// Checks every option: InvalidArgument naming the option and its value.
[[nodiscard]] Status ValidateOptions(const Options& options);

}  // namespace mxfs
