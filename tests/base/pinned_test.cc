// Pinned<T> (base/pinned.h): a versioned snapshot is usable only through a
// named handle, so a range-for over a member of a temporary does not compile.
#include <catch2/catch.hpp>

#include <memory>
#include <utility>
#include <vector>

#include "base/pinned.h"

using mxfs::Pinned;

namespace {

struct Rows {
  std::vector<int> rows;
};

// Whether the expression `f()->rows` compiles for a temporary handle
// returned by value, and `h->rows` for a named one.
template <typename H>
concept TemporaryArrow = requires { std::declval<H>()->rows; };
template <typename H>
concept TemporaryStar = requires { (*std::declval<H>()).rows; };
template <typename H>
concept TemporaryGet = requires { std::declval<H>().get(); };
template <typename H>
concept NamedArrow = requires(const H& h) { h->rows; };

static_assert(!TemporaryArrow<Pinned<const Rows>>, "-> on a temporary Pinned must not compile");
static_assert(!TemporaryStar<Pinned<const Rows>>, "* on a temporary Pinned must not compile");
static_assert(!TemporaryGet<Pinned<const Rows>>, "get() on a temporary Pinned must not compile");
static_assert(NamedArrow<Pinned<const Rows>>);
// What the guard replaces: a temporary shared_ptr lets the pattern through.
static_assert(TemporaryArrow<std::shared_ptr<const Rows>>);

}  // namespace

TEST_CASE("Pinned: a named handle keeps the snapshot alive after every other owner dropped it") {
  auto owner = std::make_shared<const Rows>(Rows{{1, 2, 3}});
  std::weak_ptr<const Rows> watch = owner;
  Pinned<const Rows> h(owner);
  owner.reset();
  REQUIRE_FALSE(watch.expired());
  int sum = 0;
  for (int r : h->rows) sum += r;
  CHECK(sum == 6);
  CHECK((*h).rows.size() == 3);
  CHECK(h.get() == h.shared().get());
  std::shared_ptr<const Rows> kept = std::move(h).shared();
  CHECK_FALSE(static_cast<bool>(h));
  kept.reset();
  CHECK(watch.expired());
}
