// kvbench's measurement: per-thread Stats that print db_bench's result
// line and histograms, and the ReporterAgent that writes the interval
// throughput to --report_file. Defined here, inline, because every
// operation of a benchmark goes through Stats::FinishedOps.
//
// Thread-safety: see each class.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "base/status.h"
#include "tools/histogram.h"

namespace mxfs::kvbench {

inline uint64_t NowMicros() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Closes a stdio FILE; the deleter of FilePtr. Thread-safety: stateless.
struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<FILE, FileCloser>;

// Writes "secs_elapsed,interval_qps" every interval to the report file, as
// db_bench's ReporterAgent does: one file per benchmark (rewritten when the
// next benchmark starts), seconds since the benchmark started (rounded) and
// the operations completed in the interval divided by its length.
// Thread-safety: ReportOps may be called from any thread.
class ReporterAgent {
 public:
  static Result<std::unique_ptr<ReporterAgent>> Start(const std::string& path, int64_t interval_secs) {
    FilePtr file(std::fopen(path.c_str(), "w"));
    if (!file) return Err(Status::FromErrno("--report_file " + path, errno));
    std::fputs("secs_elapsed,interval_qps\n", file.get());
    std::fflush(file.get());
    return std::make_unique<ReporterAgent>(std::move(file), interval_secs);
  }
  // Use Start; starts the reporting thread.
  ReporterAgent(FilePtr file, int64_t interval_secs) : file_(std::move(file)), interval_secs_(interval_secs) {
    thread_ = std::thread([this] { Run(); });
  }
  ~ReporterAgent() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void ReportOps(uint64_t n) { total_ops_.fetch_add(n, std::memory_order_relaxed); }

 private:
  void Run() {
    const uint64_t started = NowMicros();
    uint64_t last_ops = 0;
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      if (cv_.wait_for(l, std::chrono::seconds(interval_secs_), [this] { return stop_; })) break;
      const uint64_t ops = total_ops_.load(std::memory_order_relaxed);
      const uint64_t secs = (NowMicros() - started + 500000) / 1000000;
      std::fprintf(file_.get(), "%" PRIu64 ",%" PRIu64 "\n", secs,
                   (ops - last_ops) / static_cast<uint64_t>(interval_secs_));
      std::fflush(file_.get());
      last_ops = ops;
    }
  }

  FilePtr file_;
  const int64_t interval_secs_;
  std::atomic<uint64_t> total_ops_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

enum class OpType { kRead = 0, kWrite, kDelete, kSeek, kUpdate };

inline const char* OpTypeName(OpType t) {
  switch (t) {
    case OpType::kRead: return "read";
    case OpType::kWrite: return "write";
    case OpType::kDelete: return "delete";
    case OpType::kSeek: return "seek";
    case OpType::kUpdate: return "update";
  }
  return "op";
}

// Per-thread counters of one benchmark, merged into thread 0's after the
// run. Thread-safety: owned by one thread.
class Stats {
 public:
  void Start(bool histogram) {
    histogram_ = histogram;
    next_report_ = 100;
    done_ = 0;
    bytes_ = 0;
    seconds_ = 0;
    start_ = NowMicros();
    last_op_finish_ = start_;
    finish_ = start_;
    message_.clear();
    hist_.clear();
  }
  void Stop() {
    finish_ = NowMicros();
    seconds_ = static_cast<double>(finish_ - start_) * 1e-6;
  }
  void Merge(const Stats& other) {
    for (const auto& [type, h] : other.hist_) hist_[type].Merge(h);
    done_ += other.done_;
    bytes_ += other.bytes_;
    seconds_ += other.seconds_;
    if (other.start_ < start_) start_ = other.start_;
    if (other.finish_ > finish_) finish_ = other.finish_;
    if (message_.empty()) message_ = other.message_;
  }
  void AddMessage(const std::string& msg) {
    if (!message_.empty()) message_.push_back(' ');
    message_ += msg;
  }
  void AddBytes(uint64_t n) { bytes_ += n; }
  void FinishedOps(ReporterAgent* reporter, uint64_t n, OpType type) {
    if (reporter != nullptr) reporter->ReportOps(n);
    if (histogram_) {
      const uint64_t now = NowMicros();
      hist_[type].Add(now - last_op_finish_);
      last_op_finish_ = now;
    }
    done_ += n;
    if (done_ >= next_report_) {
      if (next_report_ < 1000) next_report_ += 100;
      else if (next_report_ < 5000) next_report_ += 500;
      else if (next_report_ < 10000) next_report_ += 1000;
      else if (next_report_ < 50000) next_report_ += 5000;
      else if (next_report_ < 100000) next_report_ += 10000;
      else if (next_report_ < 500000) next_report_ += 50000;
      else next_report_ += 100000;
      std::fprintf(stderr, "... finished %" PRIu64 " ops%30s\r", done_, "");
    }
  }
  // Prints db_bench's result line (and histograms with --histogram).
  void Report(std::string_view name) {
    if (done_ < 1) done_ = 1;
    const double elapsed = static_cast<double>(finish_ - start_) * 1e-6;
    const double elapsed_safe = elapsed > 0 ? elapsed : 1e-6;
    std::string extra;
    if (bytes_ > 0) {
      char rate[64];
      std::snprintf(rate, sizeof(rate), "%6.1f MB/s", (static_cast<double>(bytes_) / 1048576.0) / elapsed_safe);
      extra = rate;
    }
    if (!message_.empty()) {
      if (!extra.empty()) extra.push_back(' ');
      extra += message_;
    }
    const double throughput = static_cast<double>(done_) / elapsed_safe;
    std::printf("%-12s : %11.3f micros/op %ld ops/sec %.3f seconds %" PRIu64 " operations;%s%s\n",
                std::string(name).c_str(), seconds_ * 1e6 / static_cast<double>(done_),
                static_cast<long>(throughput), elapsed, done_, extra.empty() ? "" : " ", extra.c_str());
    for (const auto& [type, h] : hist_) {
      std::printf("Microseconds per %s:\n%s\n", OpTypeName(type), h.ToString().c_str());
    }
    std::fflush(stdout);
  }
  // Our line for the background writer of readwhilewriting and
  // seekrandomwhilewriting, whose operations db_bench leaves out of the
  // result line:
  //   Background writer: N writes in S seconds, W writes/sec, M MB/s
  void ReportBackgroundWriter() const {
    const double elapsed = static_cast<double>(finish_ - start_) * 1e-6;
    const double elapsed_safe = elapsed > 0 ? elapsed : 1e-6;
    std::printf("Background writer: %" PRIu64 " writes in %.3f seconds, %ld writes/sec, %.1f MB/s\n", done_, elapsed,
                static_cast<long>(static_cast<double>(done_) / elapsed_safe),
                (static_cast<double>(bytes_) / 1048576.0) / elapsed_safe);
    std::fflush(stdout);
  }

 private:
  bool histogram_ = false;
  uint64_t start_ = 0;
  uint64_t finish_ = 0;
  uint64_t last_op_finish_ = 0;
  double seconds_ = 0;
  uint64_t done_ = 0;
  uint64_t next_report_ = 100;
  uint64_t bytes_ = 0;
  std::string message_;
  std::map<OpType, Histogram> hist_;
};

}  // namespace mxfs::kvbench
