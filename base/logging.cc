#include "base/logging.h"

#include <pthread.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace mxfs {
namespace {
std::mutex g_log_mu;
FILE* g_log_file = nullptr;  // guarded by g_log_mu; nullptr = stderr
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}
}  // namespace

void Log(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) < g_min_level.load(std::memory_order_relaxed)) return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char tname[16] = "?";
  pthread_getname_np(pthread_self(), tname, sizeof(tname));
  std::lock_guard<std::mutex> lock(g_log_mu);
  FILE* out = g_log_file ? g_log_file : stderr;
  std::fprintf(out, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %s [%s] %s\n", tm.tm_year + 1900, tm.tm_mon + 1,
               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000, LevelName(level), tname, msg);
  std::fflush(out);
}

bool SetLogFile(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "ae");
  if (f == nullptr) return false;
  std::lock_guard<std::mutex> lock(g_log_mu);
  if (g_log_file) std::fclose(g_log_file);
  g_log_file = f;
  return true;
}

void SetMinLogLevel(LogLevel level) { g_min_level.store(static_cast<int>(level)); }

void SetThreadName(const char* name) { pthread_setname_np(pthread_self(), name); }

}  // namespace mxfs
