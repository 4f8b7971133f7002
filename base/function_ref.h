// FunctionRef: a non-owning reference to a callable, for callbacks that are
// called before the function taking them returns (C++26's std::function_ref,
// cut down). Unlike std::function it never allocates: a lambda capturing
// more than two pointers made std::function allocate on every call of the
// function taking it (Table::Get, once per Get).
//
// The referenced callable must outlive the FunctionRef: pass a lambda
// directly as the argument, do not store the FunctionRef.
//
// Thread-safety: as the callable's.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace mxfs {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT: implicit, as std::function's
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace mxfs
