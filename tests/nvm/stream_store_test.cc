// StreamStore (nvm/stream_store.h): the non-temporal copy writes exactly the
// source's bytes, whatever the sizes and the alignments at both ends, and
// nothing outside [dst, dst + n).
#include <catch2/catch.hpp>

#include <string>

#include "base/random.h"
#include "nvm/stream_store.h"

using namespace mxfs;

TEST_CASE("StreamStore: copies every size and alignment exactly, nothing around it") {
  Random rnd(5);
  std::string src(9000, '\0');
  for (auto& c : src) c = static_cast<char>(rnd.Next());
  for (size_t n : {0ul, 1ul, 15ul, 1023ul, 1024ul, 1025ul, 4096ul, 4120ul, 8191ul}) {
    for (size_t dst_off = 0; dst_off < 20; dst_off += 3) {
      for (size_t src_off : {0ul, 1ul, 8ul}) {
        std::string dst(9100, 'x');
        StreamStore(dst.data() + 40 + dst_off, src.data() + src_off, n);
        INFO("n " << n << " dst_off " << dst_off << " src_off " << src_off);
        CHECK(dst.compare(40 + dst_off, n, src, src_off, n) == 0);
        CHECK(dst.find_first_not_of('x') >= 40 + dst_off);
        CHECK((n == 0 ? dst.find_first_not_of('x') : dst.find_first_not_of('x', 40 + dst_off + n)) == std::string::npos);
      }
    }
  }
}
