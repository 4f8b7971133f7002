// Small helpers shared by every command-line program (mkfs/, tools/, the
// daemon, the benchmarks): the usage conventions (Cli), size and UUID
// parsing, time formatting, a directory's first entry.
//
// Thread-safety: pure functions (FirstEntry reads the directory); Cli exits
// the process and is meant for main() only.
#pragma once

#include <dirent.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace mxfs {

// The command-line conventions every program keeps (issue 17):
//   -h or --help (before a "--"): the usage on stdout, exit 0;
//   a usage error: "PROG: WHY" and the usage on stderr, exit usage_exit
//     (2; 16 for fsck.matrixfs, as fsck(8) has it), WHY naming the argument;
//   an operand (a path, a count) is never an option: one that starts with
//     '-' is refused as an unknown option unless a "--" came before it.
class Cli {
 public:
  static constexpr int kUsageExit = 2;

  // usage: the full text, starting "usage: PROG ...", ending in a newline.
  Cli(const char* prog, const char* usage, int usage_exit = kUsageExit)
      : prog_(prog), usage_(usage), usage_exit_(usage_exit) {}

  [[noreturn]] void Help() const {
    std::fputs(usage_, stdout);
    std::fflush(stdout);
    std::exit(0);
  }

  [[noreturn]] void Fail(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\n%s", prog_, why.c_str(), usage_);
    std::exit(usage_exit_);
  }

  // Help() when an argument before "--" is -h or --help; call it first, so
  // that --help wins over every other argument, right or wrong.
  void HelpIfAsked(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--") == 0) return;
      if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) Help();
    }
  }

  [[noreturn]] void UnknownOption(const std::string& arg) const { Fail("unknown option " + arg); }

  // For programs whose every argument is --name=value (the benchmarks, as
  // db_bench has it): calls on_flag(name, value) for each, name without its
  // "--"; anything else is refused by name. on_flag returns false for a
  // name it does not know (refused as an unknown option).
  template <typename OnFlag>
  void ForEachFlag(int argc, char** argv, OnFlag on_flag) const {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const size_t eq = a.find('=');
      if (!IsOption(a.c_str())) Fail("unexpected argument \"" + a + "\": every argument is a --flag=value");
      if (a.rfind("--", 0) != 0 || eq == std::string::npos) Fail(a + ": every argument is a --flag=value");
      if (!on_flag(a.substr(2, eq - 2), a.substr(eq + 1))) UnknownOption(a.substr(0, eq));
    }
  }

  // The value of --name as an integer of at least min, or Fail naming both.
  long long IntFlag(const std::string& name, const std::string& v, long long min) const {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || n < min)
      Fail("--" + name + ": expected an integer >= " + std::to_string(min) + ", got '" + v + "'");
    return n;
  }

  // The value of --name as a number, or Fail naming both.
  double RealFlag(const std::string& name, const std::string& v) const {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') Fail("--" + name + ": expected a number, got '" + v + "'");
    return d;
  }

  // True when arg is an option: starts with '-' and is not "-" itself.
  static bool IsOption(const char* arg) { return arg[0] == '-' && arg[1] != '\0'; }

  // The operands of argv from first on, "--" dropped; an option among them
  // (before a "--") is refused by name. what names the operands in the
  // message for a wrong count: exactly n unless n < 0 (any number). After
  // getopt, first is optind (getopt leaves a "--" it consumed just before it).
  std::vector<std::string> Operands(int argc, char** argv, int first, int n, const char* what) const {
    std::vector<std::string> out;
    bool options_end = first > 1 && std::strcmp(argv[first - 1], "--") == 0;
    for (int i = first; i < argc; ++i) {
      if (!options_end && std::strcmp(argv[i], "--") == 0) {
        options_end = true;
        continue;
      }
      if (!options_end && IsOption(argv[i])) UnknownOption(argv[i]);
      out.push_back(argv[i]);
    }
    if (n >= 0 && static_cast<int>(out.size()) < n) Fail(std::string("missing ") + what);
    if (n >= 0 && static_cast<int>(out.size()) > n) Fail("unexpected argument \"" + out[n] + "\"");
    return out;
  }

 private:
  const char* prog_;
  const char* usage_;
  int usage_exit_;
};

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
