// matrixfs-stat: a live view of a mounted MatrixFS instance (man/matrixfs-stat.8).
//
//   matrixfs-stat MOUNTPOINT [-i SECONDS] [-c COUNT] [--json]
//
// Reads MOUNTPOINT/.matrixfs/{stats,levels,container,compactions} and shows
// one screen: operations and bytes per second (deltas between two reads;
// since mount for the first one), write amplification, stall time, the
// levels, the container and the last compactions. With -i it refreshes
// every SECONDS like iostat (until interrupted, or COUNT times); --json
// prints one JSON object per refresh on one line, for scripts.
//
// Exit: 0, 1 error (not a MatrixFS mount), 2 usage.
//
// Thread-safety: a single-threaded program.
#include <getopt.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/cli_util.h"

namespace {

struct Sample {
  std::map<std::string, std::string> stats;  // engine counters and the MatrixFS section
  std::map<std::string, uint64_t> ops;
  std::vector<std::vector<std::string>> levels;  // level, files, bytes
  std::vector<std::string> container;            // lines
  std::vector<std::string> compaction_header;
  std::vector<std::vector<std::string>> compactions;
  double when = 0;
};

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::vector<std::string> Words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  std::string s;
  while (in >> s) w.push_back(s);
  return w;
}

bool Read(const std::string& mnt, Sample* s, std::string* err) {
  const std::string dir = mnt + "/.matrixfs/";
  std::string text;
  if (!ReadFile(dir + "stats", &text)) {
    *err = mnt + " is not a MatrixFS mount (cannot read " + dir + "stats: " + std::strerror(errno) + ")";
    return false;
  }
  std::istringstream in(text);
  std::string line;
  bool fs_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("**", 0) == 0) {
      fs_section = true;
      continue;
    }
    std::vector<std::string> w = Words(line);
    if (w.empty()) continue;
    if (w[0] == "ops") {
      for (size_t i = 1; i < w.size(); ++i) {
        size_t eq = w[i].find('=');
        if (eq != std::string::npos) s->ops[w[i].substr(0, eq)] = std::strtoull(w[i].c_str() + eq + 1, nullptr, 10);
      }
    } else if (fs_section && w.size() > 1 && w[1].find('=') != std::string::npos) {
      // "memory inode_table=1 handles=0 ...": fs.memory.inode_table, ...
      for (size_t i = 1; i < w.size(); ++i) {
        size_t eq = w[i].find('=');
        if (eq != std::string::npos) s->stats["fs." + w[0] + "." + w[i].substr(0, eq)] = w[i].substr(eq + 1);
      }
    } else if (fs_section) {
      for (size_t i = 0; i + 1 < w.size(); i += 2) s->stats["fs." + w[i]] = w[i + 1];
    } else if (w.size() == 2) {
      s->stats[w[0]] = w[1];
    }
  }
  if (ReadFile(dir + "levels", &text)) {
    std::istringstream lv(text);
    while (std::getline(lv, line)) {
      std::vector<std::string> w = Words(line);
      if (w.size() >= 3 && w[0].size() > 1 && w[0][0] == 'L' && std::isdigit(static_cast<unsigned char>(w[0][1]))) {
        s->levels.push_back({w[0].substr(1), w[1], w[2]});
      }
    }
  }
  if (ReadFile(dir + "container", &text)) {
    std::istringstream ct(text);
    while (std::getline(ct, line)) {
      if (!line.empty()) s->container.push_back(line);
    }
  }
  if (ReadFile(dir + "compactions", &text)) {
    std::istringstream cp(text);
    bool first = true;
    while (std::getline(cp, line)) {
      std::vector<std::string> w = Words(line);
      if (w.empty()) continue;
      if (first) {
        s->compaction_header = w;
        first = false;
      } else {
        s->compactions.push_back(w);
      }
    }
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  s->when = static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
  return true;
}

uint64_t Num(const Sample& s, const std::string& k) {
  auto it = s.stats.find(k);
  return it == s.stats.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
}

uint64_t TotalOps(const Sample& s) {
  uint64_t t = 0;
  for (const auto& [k, v] : s.ops) t += v;
  return t;
}

std::string JsonString(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A number stays a JSON number; anything else becomes a string.
std::string JsonValue(const std::string& v) {
  if (v.empty()) return "\"\"";
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  bool numeric = *end == '\0' && (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '-');
  return numeric ? v : JsonString(v);
}

struct Rates {
  double seconds = 0;
  double ops = 0, bytes_read = 0, bytes_written = 0, stall_micros = 0;
};

Rates RatesOf(const Sample& cur, const Sample* prev) {
  Rates r;
  if (prev == nullptr) return r;
  r.seconds = cur.when - prev->when;
  if (r.seconds <= 0) return r;
  r.ops = static_cast<double>(TotalOps(cur) - TotalOps(*prev)) / r.seconds;
  r.bytes_read = static_cast<double>(Num(cur, "fs.bytes_read") - Num(*prev, "fs.bytes_read")) / r.seconds;
  r.bytes_written = static_cast<double>(Num(cur, "fs.bytes_written") - Num(*prev, "fs.bytes_written")) / r.seconds;
  r.stall_micros = static_cast<double>(Num(cur, "stall.micros.total") - Num(*prev, "stall.micros.total"));
  return r;
}

void PrintJson(const std::string& mnt, const Sample& s, const Sample* prev) {
  std::string out = "{\"mountpoint\":" + JsonString(mnt) + ",\"stats\":{";
  bool first = true;
  for (const auto& [k, v] : s.stats) {
    out += (first ? "" : ",") + JsonString(k) + ":" + JsonValue(v);
    first = false;
  }
  out += "},\"ops\":{";
  first = true;
  for (const auto& [k, v] : s.ops) {
    out += (first ? "" : ",") + JsonString(k) + ":" + std::to_string(v);
    first = false;
  }
  out += "},\"levels\":[";
  for (size_t i = 0; i < s.levels.size(); ++i) {
    out += (i ? "," : "") + std::string("{\"level\":") + JsonValue(s.levels[i][0]) +
           ",\"files\":" + JsonValue(s.levels[i][1]) + ",\"bytes\":" + JsonValue(s.levels[i][2]) + "}";
  }
  out += "],\"container\":[";
  for (size_t i = 0; i < s.container.size(); ++i) out += (i ? "," : "") + JsonString(s.container[i]);
  out += "],\"compactions\":[";
  for (size_t i = 0; i < s.compactions.size(); ++i) {
    out += i ? ",{" : "{";
    for (size_t j = 0; j < s.compactions[i].size(); ++j) {
      std::string key = j < s.compaction_header.size() ? s.compaction_header[j] : "field" + std::to_string(j);
      out += (j ? "," : "") + JsonString(key) + ":" + JsonValue(s.compactions[i][j]);
    }
    out += "}";
  }
  Rates r = RatesOf(s, prev);
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "],\"rates\":{\"interval_s\":%.3f,\"ops_per_s\":%.1f,\"bytes_read_per_s\":%.1f,"
                "\"bytes_written_per_s\":%.1f,\"stall_micros\":%.0f}}",
                r.seconds, r.ops, r.bytes_read, r.bytes_written, r.stall_micros);
  out += buf;
  std::printf("%s\n", out.c_str());
}

void PrintScreen(const std::string& mnt, const Sample& s, const Sample* prev) {
  Rates r = RatesOf(s, prev);
  std::printf("MatrixFS %s  (%s)\n", mnt.c_str(),
              prev ? ("last " + std::to_string(r.seconds).substr(0, 5) + " s").c_str() : "totals since mount");
  if (prev) {
    std::printf("  ops/s %10.1f   read %10.1f KiB/s   written %10.1f KiB/s   stall %8.0f us\n", r.ops,
                r.bytes_read / 1024, r.bytes_written / 1024, r.stall_micros);
  } else {
    std::printf("  ops %10" PRIu64 "   read %10" PRIu64 " KiB   written %10" PRIu64 " KiB   stall %8" PRIu64 " us\n",
                TotalOps(s), Num(s, "fs.bytes_read") / 1024, Num(s, "fs.bytes_written") / 1024,
                Num(s, "stall.micros.total"));
  }
  auto wa = s.stats.find("write.amplification");
  std::printf("  write amplification %s   flushes %" PRIu64 "   compactions %" PRIu64 "   inodes %" PRIu64 "\n",
              wa == s.stats.end() ? "-" : wa->second.c_str(), Num(s, "flushes"), Num(s, "compactions"),
              Num(s, "fs.inodes"));
  if (s.stats.count("fs.memory.inode_table")) {
    std::printf("  daemon memory: inode table %" PRIu64 ", malloc in use %.1f MiB, free kept %.1f MiB, mmapped %.1f "
                "MiB, trims %" PRIu64 "\n",
                Num(s, "fs.memory.inode_table"), Num(s, "fs.memory.malloc_in_use_kb") / 1024.0,
                Num(s, "fs.memory.malloc_free_kb") / 1024.0, Num(s, "fs.memory.malloc_mmap_kb") / 1024.0,
                Num(s, "fs.memory.trims"));
  }
  std::printf("  level  files        bytes\n");
  for (const auto& l : s.levels) std::printf("  L%-4s %6s %12s\n", l[0].c_str(), l[1].c_str(), l[2].c_str());
  std::printf("  container:\n");
  for (const auto& line : s.container) std::printf("    %s\n", line.c_str());
  std::printf("  last compactions (of %zu):\n", s.compactions.size());
  size_t from = s.compactions.size() > 5 ? s.compactions.size() - 5 : 0;
  for (size_t i = from; i < s.compactions.size(); ++i) {
    std::string line;
    for (const auto& w : s.compactions[i]) line += w + " ";
    std::printf("    %s\n", line.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
}

const mxfs::Cli kCli("matrixfs-stat",
                     "usage: matrixfs-stat MOUNTPOINT [-i SECONDS] [-c COUNT] [--json]\n"
                     "  -i SECONDS   refresh every SECONDS (rates are per second over the interval)\n"
                     "  -c COUNT     stop after COUNT reports (with -i)\n"
                     "  --json       one JSON object per report\n"
                     "  -h, --help   this text\n");

// An empty msg asks for the help text.
[[noreturn]] void Usage(const std::string& msg) {
  if (msg.empty()) kCli.Help();
  kCli.Fail(msg);
}

}  // namespace

int main(int argc, char** argv) {
  double interval = 0;
  long count = -1;
  bool json = false;
  static const option kLong[] = {{"json", no_argument, nullptr, 'j'},
                                 {"interval", required_argument, nullptr, 'i'},
                                 {"count", required_argument, nullptr, 'c'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  kCli.HelpIfAsked(argc, argv);
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":i:c:h", kLong, nullptr)) != -1) {
    char* end = nullptr;
    switch (c) {
      case 'i':
        interval = std::strtod(optarg, &end);
        if (*end != '\0' || !(interval > 0)) Usage(std::string("-i: \"") + optarg + "\" is not a positive number of seconds");
        break;
      case 'c':
        count = std::strtol(optarg, &end, 10);
        if (*end != '\0' || count <= 0) Usage(std::string("-c: \"") + optarg + "\" is not a positive count");
        break;
      case 'j': json = true; break;
      case 'h': Usage("");
      case ':': Usage(std::string("option ") + argv[optind - 1] + " needs an argument");
      default: kCli.UnknownOption(argv[optind - 1]);
    }
  }
  const std::string mnt = kCli.Operands(argc, argv, optind, 1, "MOUNTPOINT")[0];
  Sample prev;
  bool have_prev = false;
  for (long n = 0; count < 0 || n < count; ++n) {
    Sample s;
    std::string err;
    if (!Read(mnt, &s, &err)) {
      std::fprintf(stderr, "matrixfs-stat: %s\n", err.c_str());
      return 1;
    }
    if (json) {
      PrintJson(mnt, s, have_prev ? &prev : nullptr);
    } else {
      PrintScreen(mnt, s, have_prev ? &prev : nullptr);
    }
    std::fflush(stdout);
    if (interval <= 0) break;
    prev = std::move(s);
    have_prev = true;
    if (count < 0 || n + 1 < count) usleep(static_cast<useconds_t>(interval * 1e6));
  }
  return 0;
}
