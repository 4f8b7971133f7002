#include "kvcore/wal_store.h"

#include <algorithm>

#include "kvcore/db_context.h"
#include "kvcore/filename.h"
#include "kvcore/log_reader.h"
#include "kvcore/log_writer.h"

namespace mxfs {

namespace {

class SsdWalStore final : public WalStore {
 public:
  explicit SsdWalStore(const DbContext* ctx) : ctx_(ctx) {}

  Result<std::unique_ptr<WalWriter>> NewLog(uint64_t number) override {
    // Small appends: a plain pwrite costs less than an io_uring round trip
    // (buffered writes are punted to an io-wq worker).
    FileOptions options;
    options.use_io_uring = false;
    auto file = ctx_->fs->NewWritableFile(LogName(number), options);
    if (!file) return Err(file.error());
    // The new log's directory entry must be durable before a synced write in it is acknowledged.
    Status s = ctx_->fs->SyncDir(ctx_->dbname);
    if (!s.ok()) return Err(std::move(s));
    return std::unique_ptr<WalWriter>(std::make_unique<LogWriter>(std::move(*file)));
  }

  Result<std::vector<uint64_t>> ListLogs() override {
    auto children = ctx_->fs->GetChildren(ctx_->dbname);
    if (!children) return Err(children.error());
    std::vector<uint64_t> logs;
    for (const std::string& name : *children) {
      uint64_t number;
      FileType type;
      if (ParseFileName(name, &number, &type) && type == FileType::kLog) logs.push_back(number);
    }
    std::sort(logs.begin(), logs.end());
    return logs;
  }

  Result<std::unique_ptr<WalReader>> OpenLog(uint64_t number) override {
    auto file = ctx_->fs->NewSequentialFile(LogName(number));
    if (!file) return Err(file.error());
    return std::unique_ptr<WalReader>(std::make_unique<LogReader>(std::move(*file)));
  }

  Status RemoveLog(uint64_t number) override { return ctx_->fs->RemoveFile(LogName(number)); }

  std::string LogName(uint64_t number) const override { return LogFileName(ctx_->dbname, number); }

 private:
  const DbContext* ctx_;
};

}  // namespace

std::unique_ptr<WalStore> NewSsdWalStore(const DbContext* ctx) { return std::make_unique<SsdWalStore>(ctx); }

}  // namespace mxfs
