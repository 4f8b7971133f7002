// Log: one line per event to stderr (or a file set with SetLogFile), with a
// UTC timestamp and the calling thread's name. Used for background errors and
// state changes a user must be able to read later.
//
// Thread-safety: thread-safe; lines are never interleaved.
#pragma once

#include <string>

namespace mxfs {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

void Log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Redirects the log to path (appending). Returns false and keeps stderr on failure.
bool SetLogFile(const std::string& path);
void SetMinLogLevel(LogLevel level);

// Names the calling thread (visible in ps -L, top -H, /proc/<pid>/task/*/comm).
// Linux limits the name to 15 bytes.
void SetThreadName(const char* name);

}  // namespace mxfs

#define MXFS_LOG_INFO(...) ::mxfs::Log(::mxfs::LogLevel::kInfo, __VA_ARGS__)
#define MXFS_LOG_WARN(...) ::mxfs::Log(::mxfs::LogLevel::kWarn, __VA_ARGS__)
#define MXFS_LOG_ERROR(...) ::mxfs::Log(::mxfs::LogLevel::kError, __VA_ARGS__)
