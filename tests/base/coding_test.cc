#include <catch2/catch.hpp>
#include <xxhash.h>

#include <cstring>
#include <random>
#include <string>

#include "base/coding.h"
#include "base/comparator.h"
#include "base/hash.h"
#include "base/random.h"
#include "base/status.h"

using namespace mxfs;

TEST_CASE("Coding: varint64 round-trips every bit width") {
  std::string buf;
  std::vector<uint64_t> values;
  for (int shift = 0; shift < 64; shift++) {
    uint64_t v = 1ull << shift;
    values.push_back(v - 1);
    values.push_back(v);
    values.push_back(v + 1);
  }
  for (uint64_t v : values) PutVarint64(&buf, v);
  Slice in(buf);
  for (uint64_t v : values) {
    uint64_t got = 0;
    REQUIRE(GetVarint64(&in, &got));
    CHECK(got == v);
  }
  CHECK(in.empty());
}

TEST_CASE("Coding: truncated varint is rejected, not read past the end") {
  std::string buf;
  PutVarint32(&buf, 0xffffffffu);
  for (size_t n = 0; n < buf.size(); n++) {
    Slice in(buf.data(), n);
    uint32_t v;
    CHECK_FALSE(GetVarint32(&in, &v));
  }
}

TEST_CASE("Coding: varint32 overflow is rejected") {
  const char bad[] = {'\xff', '\xff', '\xff', '\xff', '\x7f'};
  Slice in(bad, sizeof(bad));
  uint32_t v;
  CHECK_FALSE(GetVarint32(&in, &v));
}

TEST_CASE("Coding: big-endian keys sort numerically") {
  Random rnd(42);
  for (int i = 0; i < 1000; i++) {
    uint64_t a = rnd.Next(), b = rnd.Next();
    std::string ka, kb;
    PutBigEndian64(&ka, a);
    PutBigEndian64(&kb, b);
    CHECK((Slice(ka).compare(Slice(kb)) < 0) == (a < b));
    Slice s(ka);
    uint64_t back;
    REQUIRE(GetBigEndian64(&s, &back));
    CHECK(back == a);
  }
}

TEST_CASE("Coding: BigEndianPrefix64 is the first 8 bytes, zero-padded, and orders as the bytes do") {
  CHECK(BigEndianPrefix64(Slice()) == 0);
  CHECK(BigEndianPrefix64(Slice("\x01", 1)) == 0x0100000000000000ull);
  CHECK(BigEndianPrefix64(Slice("abcdefghij")) == BigEndianPrefix64(Slice("abcdefgh")));
  std::string k;
  PutBigEndian64(&k, 0x0102030405060708ull);
  CHECK(BigEndianPrefix64(k + "tail") == 0x0102030405060708ull);
  Random rnd(43);
  for (int i = 0; i < 1000; i++) {
    std::string a(rnd.Uniform(12), '\0'), b(rnd.Uniform(12), '\0');
    for (char& c : a) c = static_cast<char>(rnd.Uniform(3));
    for (char& c : b) c = static_cast<char>(rnd.Uniform(3));
    const uint64_t pa = BigEndianPrefix64(a), pb = BigEndianPrefix64(b);
    if (pa < pb) CHECK(Slice(a).compare(Slice(b)) < 0);
    if (pa > pb) CHECK(Slice(a).compare(Slice(b)) > 0);
  }
}

TEST_CASE("Coding: length-prefixed slice with short body fails") {
  std::string buf;
  PutLengthPrefixedSlice(&buf, Slice("hello"));
  Slice in(buf.data(), buf.size() - 1);
  Slice out;
  CHECK_FALSE(GetLengthPrefixedSlice(&in, &out));
}

TEST_CASE("Checksum32: detects a single flipped bit") {
  std::string data(4096, 'x');
  uint32_t c = Checksum32(Slice(data));
  data[1234] ^= 0x10;
  CHECK(Checksum32(Slice(data)) != c);
  CHECK(Checksum32("ab", 2, "cd", 2) == Checksum32("abcd", 4));
}

TEST_CASE("Checksum32: the low 32 bits of XXH3-64 at every length, whichever vector path hashes it") {
  // The on-media format: a dispatched (AVX2/AVX-512) hash must equal the
  // plain one, in one piece and in two at every split.
  std::string data(9000, '\0');
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<char>(i * 131 + (i >> 7));
  for (size_t n : {0, 1, 16, 240, 241, 511, 512, 513, 1024, 4096, 4124, 8191, 9000}) {
    const uint32_t want = static_cast<uint32_t>(XXH3_64bits(data.data(), n));
    CHECK(Checksum32(data.data(), n) == want);
    for (size_t split : {size_t{0}, n / 3, n / 2, n}) {
      CHECK(Checksum32(data.data(), split, data.data() + split, n - split) == want);
    }
  }
}

TEST_CASE("Status: FromErrno keeps errno and maps the code") {
  Status s = Status::FromErrno("open /x", ENOSPC);
  CHECK(s.IsNoSpace());
  CHECK(s.err() == ENOSPC);
  CHECK(s.ToString().find("open /x") != std::string::npos);
  Status t = s.WithContext("flush");
  CHECK(t.IsNoSpace());
  CHECK(t.ToString().find("flush: open /x") != std::string::npos);
  CHECK(Status::OK().ok());
  CHECK(Status::FromErrno("x", ENOENT).IsNotFound());
}

TEST_CASE("BytewiseComparator: separator and successor stay in range") {
  const Comparator* c = BytewiseComparator();
  std::string start = "abcdef";
  c->FindShortestSeparator(&start, Slice("abzz"));
  CHECK(c->Compare(Slice(start), Slice("abcdef")) >= 0);
  CHECK(c->Compare(Slice(start), Slice("abzz")) < 0);
  std::string k = "\xff\xff" "a";
  c->FindShortSuccessor(&k);
  CHECK(c->Compare(Slice(k), Slice("\xff\xff" "a")) >= 0);
}

TEST_CASE("Comparator: the inline byte compare has memcmp's sign for every length and byte") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> len(0, 40), byte(0, 255), pos(0, 39);
  for (int i = 0; i < 20000; i++) {
    const size_t n = static_cast<size_t>(len(rng));
    std::string a(n, '\0'), b;
    for (char& c : a) c = static_cast<char>(byte(rng));
    b = a;
    // Equal, or different in one byte (high bytes too: memcmp compares unsigned).
    if (n > 0 && i % 4 != 0) b[static_cast<size_t>(pos(rng)) % n] = static_cast<char>(byte(rng));
    const int want = std::memcmp(a.data(), b.data(), n);
    const int got = mxfs::CompareBytesInline(a.data(), b.data(), n);
    INFO("length " << n << " case " << i);
    REQUIRE((want < 0) == (got < 0));
    REQUIRE((want > 0) == (got > 0));
  }
}
