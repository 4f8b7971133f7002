// mxfs-torture: crash torture for MatrixFS. Rounds of
//
//   mount -> check the model -> random workload -> SIGKILL of the daemon ->
//   detach the dead mount -> fsck.matrixfs -n
//
// on the same instances across rounds (damage accumulates), alternating a
// pool-backed instance (PM WAL and matrix container L0) and an SSD-only one.
//
//   mxfs-torture --bin DIR [--rounds N] [--time-limit SECONDS] [--seed S]
//                [--dir SCRATCH] [--pool | --ssd] [--threads N]
//                [--round-ms MS] [--mount-options OPTS] [--full MB] [-v]
//
// Workload: --threads workers, each owning the subtree wK of the mount,
// draw random operations from their model (tools/torture/fs_model.h):
// creates, writes at random offsets (small inline files and large ones
// crossing the inline limit), appends, truncates, fallocate (plain and
// KEEP_SIZE), punch and zero range, fsync, mkdir/rmdir, rename (new names,
// replacing files and empty directories, moving directories), rename with
// RENAME_WHITEOUT, link/unlink, symlink, O_TMPFILE named by linkat,
// set/removexattr, chmod.
//
// Acknowledgement rule. The daemon mounts with the kernel's writeback cache,
// so a write() that returned may still sit in the page cache: the kernel
// acknowledged it, the filesystem did not. An operation is acknowledged when
// the last syscall of it returned success: for data (create with content,
// write, append, fallocate, punch, zero range, O_TMPFILE, fsync) that is
// close() of the descriptor
// (close sends FUSE flush after the kernel wrote its dirty pages back) or a
// successful fsync() before it; for metadata (mkdir, rmdir, rename, link,
// unlink, symlink, truncate, setxattr, removexattr, chmod) the syscall itself.
// Every acknowledged operation must survive SIGKILL of the daemon, with a
// pool (PM WAL, no fsync) and without (sync writes). Each worker has at most
// one operation in flight when the daemon dies; for it the checker accepts
// the state before or after it, the bytes of the file it changes may be any
// mix of old and new (see fs_model.h). The state found becomes the model.
//
// Kills, chosen per round: SIGKILL at a random moment of the workload;
// SIGKILL a few milliseconds after writing "flush" or "compact" to
// .matrixfs/control (so it lands in a memtable flush or column compaction);
// or MXFS_KILL_AT=<kill point> (base/kill_point.h) with flush/compact
// commands driving the daemon into it — it may also die there during
// recovery or while being checked. A kill point not reached within the
// round ends with a plain SIGKILL.
//
// fsck.matrixfs -n must exit 0 after each kill and after the final clean
// unmount. After a kill it may print "recovery pending:" lines for the
// leftovers of interrupted operations that the next mount collects (an
// object without inode or of an inline inode, an orphan record): they are
// not problems on an uncleanly unmounted instance, and are only counted
// (see CrashLeftovers).
//
// --full MB: each instance's data directory is on a tmpfs of MB MiB that a
// filler file leaves only 24 MiB of, so the workload keeps running into a
// full filesystem (fuse/space_guard.h). ENOSPC is then an expected outcome
// of an operation: its worker stops for the round, and the operation counts
// as in flight at the kill (checked as above: it changed nothing, or all or
// part of what it writes). Nothing acknowledged may be lost.
//
// Prints one line per round and a summary; exits 0 when every round passed,
// 1 at the first failure (round, seed, instance, path, expected and found),
// keeping the scratch directory for inspection, 2 on bad usage.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/cli_util.h"
#include "tools/torture/daemon.h"
#include "tools/torture/fs_model.h"

namespace mxfs::torture {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kInlineLimit = 65536;  // the format default (fuse/superblock.h)

const char* const kPoolKillPoints[] = {
    "wal.mid_append",         "wal.before_tail",          "wal.after_tail",
    "rowtable.mid_copy",      "rowtable.after_copy",      "rowtable.before_commit",
    "rowtable.after_commit",  "container.before_switch",  "container.after_switch",
    "column.before_commit",   "column.before_free",       "column.after_unlink",
    "column.after_free",      "kvcore.flush.before_manifest", "kvcore.flush.after_manifest",
    "kvcore.column.mid_merge", "kvcore.column.before_manifest", "kvcore.column.after_manifest",
    "kvcore.column.after_free", "kvcore.blob.mid_file",     "kvcore.blob.after_sync",
    "kvcore.blob.gc_before_manifest", "kvcore.blob.gc_after_manifest", "kvcore.compaction.before_output_sync",
    "kvcore.column.pipelined", "fuse.fallocate.after_object", "fuse.hole.after_object",
};
const char* const kSsdKillPoints[] = {"kvcore.flush.before_manifest",      "kvcore.flush.after_manifest",
                                      "kvcore.compaction.before_manifest", "kvcore.compaction.after_manifest",
                                      "kvcore.blob.mid_file",              "kvcore.blob.after_sync",
                                      "kvcore.blob.gc_before_manifest",    "kvcore.blob.gc_after_manifest",
                                      "kvcore.compaction.before_output_sync", "fuse.fallocate.after_object",
                                      "fuse.hole.after_object"};

std::atomic<bool> g_interrupted{false};
void OnSignal(int) { g_interrupted = true; }

struct Options {
  std::string bin;
  int rounds = 10;
  int time_limit = 60;
  uint64_t seed = 0;
  std::string dir = "/tmp";
  bool pool = true, ssd = true;
  int threads = 3;
  int round_ms = 1500;
  std::string mount_options;
  int full_mb = 0;  // --full: data directories on a small, nearly full tmpfs
  bool verbose = false;
};

const mxfs::Cli kCli("mxfs-torture",
               "usage: mxfs-torture --bin DIR [--rounds N] [--time-limit SECONDS] [--seed S] [--dir SCRATCH]\n"
               "                    [--pool | --ssd] [--threads N] [--round-ms MS] [--mount-options OPTS] [-v]\n"
               "  --bin DIR         where matrixfs and fsck.matrixfs live\n"
               "  --rounds N        rounds to run (default 10)\n"
               "  --time-limit S    start no round after S seconds (default 60)\n"
               "  --seed S          random seed (default: from the clock; printed)\n"
               "  --dir SCRATCH     parent of the scratch directory (default /tmp)\n"
               "  --pool, --ssd     only the pool-backed / only the SSD-only instance (default both)\n"
               "  --threads N       workload threads (default 3)\n"
               "  --round-ms MS     longest workload per round before the kill (default 1500)\n"
               "  --mount-options O extra matrixfs -o options for every mount (e.g. passthrough)\n"
               "  --full MB         data directories on a tmpfs of MB MiB (at least 48) with 24 MiB left free:\n"
               "                    a nearly full store, where ENOSPC is an expected outcome\n"
               "  -v                say what each round did in detail\n"
               "  -h, --help        this text\n");

// An empty msg asks for the help text.
[[noreturn]] void Usage(const std::string& msg) {
  if (msg.empty()) kCli.Help();
  kCli.Fail(msg);
}

long ParseNum(const std::string& flag, const char* s) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0' || v < 0) Usage("bad value \"" + std::string(s) + "\" for " + flag);
  return static_cast<long>(v);
}

Options ParseArgs(int argc, char** argv) {
  kCli.HelpIfAsked(argc, argv);
  Options o;
  o.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000007ull;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string val;
    size_t eq = a.find('=');
    bool has_val = a.rfind("--", 0) == 0 && eq != std::string::npos;
    if (has_val) {
      val = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    auto next = [&]() -> std::string {
      if (has_val) return val;
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    auto path = [&]() -> std::string {
      std::string p = next();
      if (mxfs::Cli::IsOption(p.c_str())) Usage(a + ": \"" + p + "\" is an option, not a path");
      return p;
    };
    if (a == "--bin") o.bin = path();
    else if (a == "--rounds") o.rounds = static_cast<int>(ParseNum(a, next().c_str()));
    else if (a == "--time-limit") o.time_limit = static_cast<int>(ParseNum(a, next().c_str()));
    else if (a == "--seed") o.seed = static_cast<uint64_t>(ParseNum(a, next().c_str()));
    else if (a == "--dir") o.dir = path();
    else if (a == "--pool") o.ssd = false;
    else if (a == "--ssd") o.pool = false;
    else if (a == "--threads") o.threads = static_cast<int>(ParseNum(a, next().c_str()));
    else if (a == "--round-ms") o.round_ms = static_cast<int>(ParseNum(a, next().c_str()));
    else if (a == "--mount-options") o.mount_options = next();
    else if (a == "--full") o.full_mb = static_cast<int>(ParseNum(a, next().c_str()));
    else if (a == "-v") o.verbose = true;
    else if (a == "-h" || a == "--help") Usage("");
    else if (mxfs::Cli::IsOption(a.c_str())) kCli.UnknownOption(a);
    else Usage("unexpected argument \"" + a + "\"");
  }
  if (o.bin.empty()) Usage("--bin is required");
  if (!o.pool && !o.ssd) Usage("--pool and --ssd exclude each other");
  if (o.threads < 1 || o.threads > 16) Usage("--threads must be 1..16");
  if (o.round_ms < 100) Usage("--round-ms must be at least 100");
  if (o.full_mb != 0 && o.full_mb < 48) Usage("--full must be at least 48 (MiB)");
  for (const char* p : {"matrixfs", "fsck.matrixfs"}) {
    if (::access((o.bin + "/" + p).c_str(), X_OK) != 0) Usage(o.bin + "/" + p + " is not executable");
  }
  return o;
}

// One workload thread's state; the model lives across rounds. Touched by
// its thread during the workload and by the main thread otherwise.
struct Worker {
  explicit Worker(int id, uint64_t seed) : model("w" + std::to_string(id)), rng(seed) {}
  FsModel model;
  std::mt19937_64 rng;
  bool has_pending = false;  // an operation was in flight at the kill
  Op pending;
  int err = 0;  // errno of the failed syscall of this round, if any
  std::string what;
  bool err_while_alive = false;
  uint64_t acked = 0;
};

struct Instance {
  std::string kind;  // "pool" or "ssd"
  std::unique_ptr<Daemon> daemon;
  std::vector<std::unique_ptr<Worker>> workers;
  bool started = false;
};

struct Totals {
  int rounds = 0;
  uint64_t acked = 0;
  uint64_t by_op[static_cast<size_t>(OpKind::kCount)] = {};
  std::map<std::string, int> kills;
  int inflight_before = 0, inflight_after = 0;
  int enospc = 0;  // operations refused with ENOSPC (--full)
  std::map<std::string, int> leftovers;  // fsck -n "recovery pending" findings, by kind
  int failures = 0;
};

void RunWorker(Worker* w, const std::string* mnt, pid_t daemon, const std::atomic<bool>* stop,
               std::atomic<uint64_t>* by_op) {
  while (!stop->load()) {
    Op op = w->model.RandomOp(w->rng, kInlineLimit);
    w->pending = op;
    w->has_pending = true;
    std::string what;
    int e = Execute(*mnt, op, &what);
    if (e != 0) {
      w->err = e;
      w->what = what + ": " + std::strerror(e) + " (during " + op.ToString() + ")";
      // An error caused by the kill comes with a dead daemon (within moments).
      bool alive = true;
      for (int i = 0; i < 300 && (alive = Daemon::ChildAlive(daemon)); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      w->err_while_alive = alive;
      return;
    }
    w->model.Apply(op);
    w->has_pending = false;
    w->acked++;
    by_op[static_cast<size_t>(op.kind)]++;
  }
}

// The "recovery pending:" lines of fsck -n's output, one kind name each:
// leftovers of interrupted operations that the next mount collects.
void CrashLeftovers(const std::string& out, std::vector<std::string>* kinds) {
  static constexpr std::string_view kPrefix = "recovery pending: ";
  size_t pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    std::string line = out.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.starts_with(kPrefix)) continue;
    line.erase(0, kPrefix.size());
    if (line.starts_with("object ") && line.find(" does not exist") != std::string::npos) {
      kinds->push_back("object without inode");
    } else if (line.starts_with("object ") && line.find(" keeps its data inline") != std::string::npos) {
      kinds->push_back("object of an inline inode");
    } else if (line.starts_with("orphan record ")) {
      kinds->push_back("orphan inode");
    } else {
      kinds->push_back("other");
    }
  }
}

// Writes cmd to .matrixfs/control; errors after the kill are expected.
void Control(const std::string& mnt, const char* cmd) {
  int fd = ::open((mnt + "/.matrixfs/control").c_str(), O_WRONLY);
  if (fd < 0) return;
  ssize_t n = ::write(fd, cmd, std::strlen(cmd));
  (void)n;
  ::close(fd);
}

// --full: a tmpfs of mb MiB at dir/disk, all but 24 MiB of it taken by
// dir/disk/filler. False with *err.
bool MountFullDisk(const std::string& dir, int mb, std::string* err) {
  const std::string disk = dir + "/disk";
  ::mkdir(dir.c_str(), 0755);
  if (::mkdir(disk.c_str(), 0700) != 0) {
    *err = "mkdir " + disk + ": " + std::strerror(errno);
    return false;
  }
  const std::string opts = "size=" + std::to_string(mb) + "m,mode=0700";
  if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
    *err = "mount a tmpfs on " + disk + ": " + std::strerror(errno) + " (root only)";
    return false;
  }
  const std::string filler = disk + "/filler";
  const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  const int rc = fd < 0 ? errno : ::posix_fallocate(fd, 0, static_cast<off_t>(mb - 24) << 20);
  if (fd >= 0) ::close(fd);
  if (rc != 0) {
    *err = "filling " + filler + ": " + std::strerror(rc);
    return false;
  }
  return true;
}

// The round loop over the instances, with the totals for the summary.
// Thread-safety: used by the main thread only; it starts and joins the
// workload and control threads of each round itself.
class Torture {
 public:
  explicit Torture(Options o) : o_(std::move(o)), rng_(o_.seed) {}
  int Run();

 private:
  enum class Check { kOk, kMismatch, kIoError };
  Check Verify(Instance& in, std::string* why, int* before, int* after);
  bool Round(Instance& in, int round);
  bool Final(Instance& in);
  void Failure(const std::string& msg, Instance* in);

  Options o_;
  std::mt19937_64 rng_;
  std::string scratch_;
  std::vector<Instance> instances_;
  Totals t_;
  Clock::time_point start_ = Clock::now();
};

void Torture::Failure(const std::string& msg, Instance* in) {
  t_.failures++;
  std::fprintf(stderr, "mxfs-torture: FAILED (seed %" PRIu64 "): %s\n", o_.seed, msg.c_str());
  if (in != nullptr) {
    std::fprintf(stderr, "--- daemon log of the %s instance (%s), last lines:\n%s\n", in->kind.c_str(),
                 in->daemon->log().c_str(), in->daemon->LogTail(4000).c_str());
  }
}

Torture::Check Torture::Verify(Instance& in, std::string* why, int* before, int* after) {
  const std::string& mnt = in.daemon->mnt();
  // The mount root holds the workers' directories and nothing else.
  DIR* d = ::opendir(mnt.c_str());
  if (d == nullptr) {
    *why = "opendir " + mnt + ": " + std::strerror(errno);
    return Check::kIoError;
  }
  std::vector<std::string> top;
  while (struct dirent* de = ::readdir(d)) top.push_back(de->d_name);
  ::closedir(d);
  for (const auto& n : top) {
    if (n == "." || n == ".." || n == ".matrixfs") continue;
    bool ours = false;
    for (const auto& w : in.workers) ours |= w->model.root() == n;
    if (!ours) {
      *why = n + ": a name in the mount root no worker created";
      return Check::kMismatch;
    }
  }
  for (auto& wp : in.workers) {
    Worker& w = *wp;
    Snapshot snap;
    std::string err;
    if (!TakeSnapshot(mnt, w.model.root(), &snap, &err)) {
      *why = err;
      return Check::kIoError;
    }
    std::string why_before;
    if (Compare(w.model, snap, 0, "", &why_before)) {
      if (w.has_pending) (*before)++;
      w.has_pending = false;
      continue;
    }
    if (!w.has_pending) {
      *why = why_before + " (no operation of " + w.model.root() + " was in flight)";
      return Check::kMismatch;
    }
    FsModel next = w.model;
    next.Apply(w.pending);
    uint64_t ino = next.DataInode(w.pending);
    std::string old_data;
    if (ino != 0 && w.model.inodes().contains(ino)) old_data = w.model.inodes().at(ino).data;
    std::string why_after;
    if (!Compare(next, snap, ino, old_data, &why_after)) {
      *why = "neither the acknowledged state nor the state after the operation in flight (" +
             w.pending.ToString() + "); against the acknowledged state: " + why_before +
             "; against the state after it: " + why_after;
      return Check::kMismatch;
    }
    if (ino != 0) next.SetContent(ino, snap.at(w.pending.a).data);
    w.model = std::move(next);
    w.has_pending = false;
    (*after)++;
  }
  return Check::kOk;
}

bool Torture::Round(Instance& in, int round) {
  Daemon& d = *in.daemon;
  const auto t0 = Clock::now();
  char head[160];
  std::snprintf(head, sizeof(head), "round %d (seed %" PRIu64 ", %s instance)", round, o_.seed, in.kind.c_str());
  // The kill: 0 random moment, 1 after a control command, 2 kill point.
  const int plan = static_cast<int>(rng_() % 100) < 45 ? 0 : static_cast<int>(rng_() % 100) < 50 ? 1 : 2;
  std::string kill_at;
  if (plan == 2) {
    if (d.pooled()) kill_at = kPoolKillPoints[rng_() % (sizeof(kPoolKillPoints) / sizeof(kPoolKillPoints[0]))];
    else kill_at = kSsdKillPoints[rng_() % (sizeof(kSsdKillPoints) / sizeof(kSsdKillPoints[0]))];
  }
  const char* cmd = rng_() % 2 ? "flush" : "compact";
  const int delay_ms = static_cast<int>(50 + rng_() % static_cast<uint64_t>(o_.round_ms - 49));
  std::string kill_desc, err;
  int before = 0, after = 0;
  uint64_t acked = 0;
  std::atomic<uint64_t> by_op[static_cast<size_t>(OpKind::kCount)] = {};
  bool workload = false;

  auto res = d.Start(kill_at, &err);
  if (res == Daemon::StartResult::kFailed) {
    Failure(std::string(head) + ": starting the daemon: " + err, &in);
    return false;
  }
  in.started = true;
  if (res == Daemon::StartResult::kDiedKilled) {
    kill_desc = "kill point " + kill_at + " during mount/recovery";
  } else {
    std::string why;
    Check c = Verify(in, &why, &before, &after);
    // A daemon that died at its kill point closes the connection a moment
    // before it can be reaped.
    if (c == Check::kIoError) d.WaitExit(3000);
    if (c == Check::kMismatch || (c == Check::kIoError && d.Alive())) {
      Failure(std::string(head) + ": after remount: " + why, &in);
      return false;
    }
    if (c == Check::kIoError) {
      if (!WIFSIGNALED(d.status()) || WTERMSIG(d.status()) != SIGKILL || kill_at.empty()) {
        Failure(std::string(head) + ": the daemon died while the model was checked (" + DescribeStatus(d.status()) +
                    "): " + why,
                &in);
        return false;
      }
      kill_desc = "kill point " + kill_at + " while checking";
      d.Detach();
    } else {
      workload = true;
    }
  }

  if (workload) {
    std::atomic<bool> stop{false}, control_stop{false};
    std::vector<std::thread> threads;
    const pid_t pid = d.pid();
    const std::string mnt = d.mnt();
    for (auto& w : in.workers) {
      w->err = 0;
      w->err_while_alive = false;
      w->acked = 0;
      threads.emplace_back(RunWorker, w.get(), &mnt, pid, &stop, by_op);
    }
    std::thread control;
    bool died_alone = false;
    if (plan == 0) {
      if (d.WaitExit(delay_ms)) died_alone = true;
      else kill_desc = "SIGKILL at " + std::to_string(delay_ms) + " ms";
    } else if (plan == 1) {
      if (d.WaitExit(delay_ms)) {
        died_alone = true;
      } else {
        control = std::thread(Control, mnt, cmd);
        int after_ms = static_cast<int>(rng_() % 40);
        if (d.WaitExit(after_ms)) died_alone = true;
        else kill_desc = "SIGKILL " + std::to_string(after_ms) + " ms after \"" + cmd + "\" at " +
                         std::to_string(delay_ms) + " ms";
      }
    } else {
      control = std::thread([&mnt, &control_stop, seed = rng_()]() {
        std::mt19937_64 r(seed);
        while (!control_stop) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50 + r() % 200));
          if (!control_stop) Control(mnt, r() % 2 ? "flush" : "compact");
        }
      });
      if (d.WaitExit(o_.round_ms * 2)) {
        if (WIFSIGNALED(d.status()) && WTERMSIG(d.status()) == SIGKILL) kill_desc = "kill point " + kill_at;
        else died_alone = true;
      } else {
        kill_desc = "kill point " + kill_at + " not reached, SIGKILL at " + std::to_string(o_.round_ms * 2) + " ms";
      }
    }
    d.Kill9();  // also detaches the dead mount: blocked workers see ENOTCONN
    stop = true;
    control_stop = true;
    for (auto& th : threads) th.join();
    if (control.joinable()) control.join();
    if (died_alone) {
      Failure(std::string(head) + ": the daemon died by itself (" + DescribeStatus(d.status()) + ")", &in);
      return false;
    }
    for (auto& w : in.workers) {
      acked += w->acked;
      // A nearly full store (--full): ENOSPC is an answer, not a failure;
      // the operation stays in flight and is checked after the kill.
      if (w->err == ENOSPC && o_.full_mb > 0) {
        w->err = 0;
        w->err_while_alive = false;
        ++t_.enospc;
      }
      if (w->err != 0 && w->err_while_alive) {
        Failure(std::string(head) + ": " + w->model.root() + ": " + w->what + " while the daemon was running", &in);
        return false;
      }
    }
  }
  t_.kills[kill_desc.rfind("kill point ", 0) == 0 && kill_desc.find("not reached") == std::string::npos
               ? kill_desc
               : kill_desc.rfind("SIGKILL at", 0) == 0       ? "SIGKILL at a random moment"
               : kill_desc.find("\"flush\"") != std::string::npos ? "SIGKILL after flush"
               : kill_desc.find("\"compact\"") != std::string::npos ? "SIGKILL after compact"
                                                                    : "kill point not reached, SIGKILL"]++;
  t_.acked += acked;
  for (size_t k = 0; k < static_cast<size_t>(OpKind::kCount); ++k) t_.by_op[k] += by_op[k];
  t_.inflight_before += before;
  t_.inflight_after += after;

  std::string out;
  int rc = d.Fsck(&out);
  std::vector<std::string> leftovers;
  CrashLeftovers(out, &leftovers);
  if (rc != 0) {
    Failure(std::string(head) + ": fsck.matrixfs -n " + d.datadir() + " exited " + std::to_string(rc) +
                " after " + kill_desc + ":\n" + out,
            &in);
    return false;
  }
  for (const auto& l : leftovers) t_.leftovers[l]++;
  if (o_.verbose && (rc != 0 || !out.empty())) std::printf("  fsck -n exit %d: %s", rc, out.c_str());
  int inflight = 0;
  for (auto& w : in.workers) inflight += w->has_pending;
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("%s: checked (%d in flight found before, %d after), %" PRIu64
              " ops acknowledged, %s, %d in flight, fsck %s, %.1f s\n",
              head, before, after, acked, kill_desc.c_str(), inflight,
              leftovers.empty() ? "clean" : (std::to_string(leftovers.size()) + " crash leftovers").c_str(), secs);
  if (o_.verbose) {
    for (auto& w : in.workers) {
      if (w->has_pending) std::printf("  %s in flight: %s\n", w->model.root().c_str(), w->pending.ToString().c_str());
    }
  }
  std::fflush(stdout);
  return true;
}

// A last mount: the model checked, a clean unmount, fsck clean.
bool Torture::Final(Instance& in) {
  Daemon& d = *in.daemon;
  std::string err, why;
  if (d.Start("", &err) != Daemon::StartResult::kMounted) {
    Failure("final mount of the " + in.kind + " instance: " + err, &in);
    return false;
  }
  int before = 0, after = 0;
  if (Verify(in, &why, &before, &after) != Check::kOk) {
    Failure("final check of the " + in.kind + " instance: " + why, &in);
    return false;
  }
  t_.inflight_before += before;
  t_.inflight_after += after;
  if (!d.Stop(&err)) {
    Failure("final unmount of the " + in.kind + " instance: " + err, &in);
    return false;
  }
  std::string out;
  int rc = d.Fsck(&out);
  if (rc != 0) {
    Failure("fsck.matrixfs -n " + d.datadir() + " exited " + std::to_string(rc) + " after the clean unmount:\n" + out,
            &in);
    return false;
  }
  std::printf("final %s: checked (%d in flight found before, %d after), clean unmount, fsck clean\n",
              in.kind.c_str(), before, after);
  return true;
}

int Torture::Run() {
  ::umask(0);
  std::string tmpl = o_.dir + "/mxfs-torture-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "mxfs-torture: mkdtemp %s: %s\n", tmpl.c_str(), std::strerror(errno));
    return 1;
  }
  scratch_ = tmpl;
  ::chmod(scratch_.c_str(), 0700);
  std::string base = scratch_.substr(scratch_.rfind('/') + 1);
  std::printf("mxfs-torture: seed %" PRIu64 ", %d rounds, time limit %d s, %d threads, scratch %s\n", o_.seed,
              o_.rounds, o_.time_limit, o_.threads, scratch_.c_str());
  for (const char* kind : {"pool", "ssd"}) {
    if ((std::string(kind) == "pool" && !o_.pool) || (std::string(kind) == "ssd" && !o_.ssd)) continue;
    Instance in;
    in.kind = kind;
    std::string pool = in.kind == "pool" ? "/dev/shm/" + base + ".pool" : "";
    const std::string dir = scratch_ + "/" + kind;
    std::string datadir;
    if (o_.full_mb > 0) {
      std::string err;
      if (!MountFullDisk(dir, o_.full_mb, &err)) {
        std::fprintf(stderr, "mxfs-torture: --full: %s\n", err.c_str());
        return 1;
      }
      datadir = dir + "/disk/data";
    }
    in.daemon = std::make_unique<Daemon>(o_.bin, dir, pool, o_.mount_options, datadir);
    for (int k = 0; k < o_.threads; ++k) {
      in.workers.push_back(std::make_unique<Worker>(k, o_.seed * 1000003ull + k * 7919ull + (pool.empty() ? 1 : 2)));
    }
    instances_.push_back(std::move(in));
  }
  bool ok = true;
  int round = 0;
  for (; round < o_.rounds && ok && !g_interrupted; ++round) {
    if (round > 0 && std::chrono::duration<double>(Clock::now() - start_).count() >= o_.time_limit) break;
    ok = Round(instances_[static_cast<size_t>(round) % instances_.size()], round + 1);
    if (ok) t_.rounds++;
  }
  if (g_interrupted && ok) {
    std::fprintf(stderr, "mxfs-torture: interrupted after %d rounds\n", t_.rounds);
    ok = false;
    t_.failures++;
  }
  for (auto& in : instances_) {
    if (ok && in.started) ok = Final(in);
  }
  double secs = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string kills, ops;
  for (const auto& [k, n] : t_.kills) kills += (kills.empty() ? "" : ", ") + k + " " + std::to_string(n);
  for (size_t k = 0; k < static_cast<size_t>(OpKind::kCount); ++k) {
    ops += (ops.empty() ? "" : " ") + std::string(OpName(static_cast<OpKind>(k))) + " " + std::to_string(t_.by_op[k]);
  }
  std::string left;
  for (const auto& [k, n] : t_.leftovers) left += (left.empty() ? "" : ", ") + k + " " + std::to_string(n);
  std::printf("mxfs-torture: %d rounds in %.0f s (seed %" PRIu64 "), %" PRIu64
              " operations acknowledged (%s); kills: %s; in flight at a kill and found: %d before, %d after; "
              "fsck -n crash leftovers: %s; %sfailures: %d\n",
              t_.rounds, secs, o_.seed, t_.acked, ops.c_str(), kills.c_str(), t_.inflight_before, t_.inflight_after,
              left.empty() ? "none" : left.c_str(),
              o_.full_mb > 0 ? ("ENOSPC answers " + std::to_string(t_.enospc) + "; ").c_str() : "", t_.failures);
  for (auto& in : instances_) in.daemon->Kill9();
  if (ok) {
    for (auto& in : instances_) {
      if (o_.full_mb > 0) ::umount2((scratch_ + "/" + in.kind + "/disk").c_str(), MNT_DETACH);
    }
    for (auto& in : instances_) in.daemon->RemoveFiles();
    ::rmdir(scratch_.c_str());
    return 0;
  }
  std::fprintf(stderr, "mxfs-torture: kept %s (and its pool under /dev/shm) for inspection\n", scratch_.c_str());
  return 1;
}

}  // namespace
}  // namespace mxfs::torture

int main(int argc, char** argv) {
  using namespace mxfs::torture;
  Options o = ParseArgs(argc, argv);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  Torture t(std::move(o));
  return t.Run();
}
