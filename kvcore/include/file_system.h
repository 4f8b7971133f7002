// Re-exports the SSD file layer for users of the public API (the
// filesystem's large-file store, tests that inject faults), so that fuse/
// depends on kvcore/ only.
#pragma once

#include "ssd/file_system.h"
