// Small helpers shared by the mkfs/ and tools/ command-line programs:
// size and UUID parsing, time formatting, a directory's first entry.
//
// Thread-safety: pure functions (FirstEntry reads the directory).
#pragma once

#include <dirent.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace mxfs {

// "4096", "64K", "1M", "2G", "1T" (binary multiples). False on junk or overflow.
inline bool ParseSize(const char* s, uint64_t* out) {
  if (s == nullptr || !std::isdigit(static_cast<unsigned char>(*s))) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0) return false;
  int shift = 0;
  switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    case 't': case 'T': shift = 40; ++end; break;
    default: return false;
  }
  if (*end == 'i' || *end == 'B') ++end;
  if (*end == 'B') ++end;
  if (*end != '\0') return false;
  if (shift > 0 && v > (~0ull >> shift)) return false;
  *out = static_cast<uint64_t>(v) << shift;
  return true;
}

// 36-character canonical UUID into 16 bytes.
inline bool ParseUuid(const char* s, uint8_t out[16]) {
  if (std::strlen(s) != 36) return false;
  int j = 0;
  for (int i = 0; i < 36; ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
      continue;
    }
    if (!std::isxdigit(static_cast<unsigned char>(s[i])) || !std::isxdigit(static_cast<unsigned char>(s[i + 1]))) {
      return false;
    }
    char hex[3] = {s[i], s[i + 1], 0};
    out[j++] = static_cast<uint8_t>(std::strtoul(hex, nullptr, 16));
    ++i;
  }
  return j == 16;
}

// "2026-11-22 17:20:08 UTC".
inline std::string FormatTimeNs(uint64_t ns) {
  time_t t = static_cast<time_t>(ns / 1000000000ull);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// The name of some entry of dir other than "." and "..", or "" (also when
// dir does not exist).
inline std::string FirstEntry(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return "";
  std::string found;
  while (struct dirent* de = ::readdir(d)) {
    if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
    found = de->d_name;
    break;
  }
  ::closedir(d);
  return found;
}

}  // namespace mxfs
