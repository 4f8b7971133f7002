// Hand-built FUSE protocol messages for tests that feed KernelChannel
// without a kernel (<linux/fuse.h> layouts).
#pragma once

#include <linux/fuse.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace mxfs::testing {

// One request as the kernel sends it: a fuse_in_header whose len covers the
// header and body, followed by body.
template <typename Body>
std::string FuseRequest(uint32_t opcode, uint64_t unique, const Body& body) {
  fuse_in_header h;
  std::memset(&h, 0, sizeof(h));
  h.len = static_cast<uint32_t>(sizeof(h) + sizeof(body));
  h.opcode = opcode;
  h.unique = unique;
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  out.append(reinterpret_cast<const char*>(&body), sizeof(body));
  return out;
}

}  // namespace mxfs::testing
