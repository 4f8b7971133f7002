// Pinned<T>: a shared handle on a versioned snapshot (a matrix container
// version, an engine Version) that is used through a named local, never
// through a temporary. Its ->, * and get() exist only on lvalues, so
//
//   for (const RowRef& r : mc->Current()->rows()) ...   // does not compile
//
// in which the temporary handle is destroyed before the loop body runs (C++
// before P2718, g++ 12: the range-for does not extend it) and a reader on
// another thread can free the rows under the loop, is a compile error. Write
//
//   auto v = mc->Current();
//   for (const RowRef& r : v->rows()) ...
//
// instead. shared() gives the std::shared_ptr to store or to hand on.
//
// Thread-safety: as std::shared_ptr (distinct handles may be used from
// different threads; one handle is not synchronised).
#pragma once

#include <memory>
#include <utility>

namespace mxfs {

template <typename T>
class Pinned {
 public:
  Pinned() = default;
  explicit Pinned(std::shared_ptr<T> p) : p_(std::move(p)) {}

  T* operator->() const& { return p_.get(); }
  T* operator->() const&& = delete;
  T& operator*() const& { return *p_; }
  T& operator*() const&& = delete;
  T* get() const& { return p_.get(); }
  T* get() const&& = delete;
  explicit operator bool() const { return p_ != nullptr; }

  const std::shared_ptr<T>& shared() const& { return p_; }
  std::shared_ptr<T> shared() && { return std::move(p_); }

 private:
  std::shared_ptr<T> p_;
};

}  // namespace mxfs
