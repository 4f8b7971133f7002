#include "kvcore/level0.h"

namespace mxfs {

void Level0CompactionStats::AppendTo(std::string* out) const {
  *out += "column.compactions " + std::to_string(compactions) + "\n";
  *out += "column.bytes.read.nvm " + std::to_string(bytes_read) + "\n";
  *out += "column.bytes.written " + std::to_string(bytes_written) + "\n";
  *out += "column.blocked.micros " + std::to_string(blocked_micros) + "\n";
  *out += "column.parallel " + std::to_string(parallel) + "\n";
  *out += "column.share " + std::string(share) + "\n";
  *out += "column.share.changes " + std::to_string(share_changes) + "\n";
}

}  // namespace mxfs
