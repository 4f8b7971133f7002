// MappedCopy: memcpy out of a read-only file mapping that survives SIGBUS.
//
// A read through a mapping of a file (FileOptions::mmap_reads) costs no
// system call when the page is in the page cache, but where pread returns
// EIO (a failing disk) or a short count (the file was shortened behind our
// back), touching the mapping raises SIGBUS, which would kill the process.
// MappedCopy copies under a guard: a process-wide SIGBUS handler (installed
// on first use) jumps back into the copying thread, with the signal mask it
// had, when the fault lies in the range it is copying, and MappedCopy
// returns false; the caller then
// reads the same bytes with pread to get the real error. A SIGBUS anywhere
// else goes to the handler that was installed before ours (or the default
// action, which ends the process as it would have without us).
//
// Thread-safety: thread-safe (the guard is thread-local).
#pragma once

#include <cstddef>

namespace mxfs {

// Copies n bytes from src (inside a file mapping) to dst. False if a SIGBUS
// hit the copy: dst then holds an unspecified prefix of the bytes.
[[nodiscard]] bool MappedCopy(void* dst, const void* src, size_t n);

// Runs fn(arg) with the same guard over [src, src + n): false if a SIGBUS
// hit that range meanwhile (fn was then left part way through). For reading
// a mapping in place (a blob record checked where it lies, no copy). fn must
// only read memory and compute: a fault leaves it by siglongjmp, which runs
// no destructor and releases no lock that fn took.
[[nodiscard]] bool MappedVisit(const void* src, size_t n, void (*fn)(void* arg), void* arg);

// SIGBUS faults MappedCopy and MappedVisit have caught in this process (for tests and stats).
size_t MappedCopyFaults();

}  // namespace mxfs
