#include "ssd/block.h"

#include "base/coding.h"

namespace mxfs {

Status Block::CheckRestarts(Slice contents, uint32_t* restart_offset_out, uint32_t* num_restarts_out) {
  const size_t n = contents.size();
  if (n < 8) return Status::Corruption("block of " + std::to_string(n) + " bytes is shorter than the 8-byte minimum");
  const uint32_t num_restarts = DecodeFixed32(contents.data() + n - 4);
  const uint64_t max_restarts = (n - 4) / 4;
  if (num_restarts == 0 || num_restarts > max_restarts) {
    return Status::Corruption("block restart count " + std::to_string(num_restarts) + " invalid for a block of " +
                              std::to_string(n) + " bytes (expected 1.." + std::to_string(max_restarts) + ")");
  }
  const uint32_t restart_offset = static_cast<uint32_t>(n - 4 - 4ull * num_restarts);
  uint32_t prev = 0;
  for (uint32_t i = 0; i < num_restarts; i++) {
    uint32_t r = DecodeFixed32(contents.data() + restart_offset + 4ull * i);
    if (r >= restart_offset && !(r == 0 && restart_offset == 0)) {
      return Status::Corruption("block restart " + std::to_string(i) + " points at " + std::to_string(r) +
                              ", past the entries ending at " + std::to_string(restart_offset));
    }
    if (i > 0 && r <= prev) {
      return Status::Corruption("block restart " + std::to_string(i) + " at " + std::to_string(r) +
                              " does not follow restart " + std::to_string(i - 1) + " at " +
                              std::to_string(prev));
    }
    if (i == 0 && r != 0) return Status::Corruption("block restart 0 is " + std::to_string(r) + ", expected 0");
    prev = r;
  }
  *restart_offset_out = restart_offset;
  *num_restarts_out = num_restarts;
  return Status::OK();
}

Result<std::shared_ptr<const Block>> Block::Parse(std::string contents) {
  uint32_t restart_offset = 0, num_restarts = 0;
  if (Status s = CheckRestarts(contents, &restart_offset, &num_restarts); !s.ok()) return Err(std::move(s));
  return std::make_shared<const Block>(PrivateTag{}, std::move(contents), Slice(), restart_offset, num_restarts);
}

Result<std::shared_ptr<const Block>> Block::ParseBorrowed(Slice contents) {
  uint32_t restart_offset = 0, num_restarts = 0;
  if (Status s = CheckRestarts(contents, &restart_offset, &num_restarts); !s.ok()) return Err(std::move(s));
  return std::make_shared<const Block>(PrivateTag{}, std::string(), contents, restart_offset, num_restarts);
}

std::unique_ptr<Iterator> Block::NewIterator(std::shared_ptr<const Block> block, const Comparator* cmp) {
  return std::make_unique<Iter>(std::move(block), cmp);
}

}  // namespace mxfs
