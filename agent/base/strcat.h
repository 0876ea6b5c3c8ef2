// Cat(): absl::StrCat that also accepts std::string_view.
//
// Debian's Abseil 20220623 is built with its own absl::string_view (not an
// alias of std::string_view), so StrCat rejects std::string_view arguments.
// Header-only, stateless.
#ifndef BALLAST_AGENT_BASE_STRCAT_H_
#define BALLAST_AGENT_BASE_STRCAT_H_

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace ballast::base {

// Debian's Abseil 20220623 has its own absl::string_view (not an alias of
// std::string_view); this adapts our std::string_view arguments for StrCat.
inline absl::string_view AV(std::string_view v) { return absl::string_view(v.data(), v.size()); }
template <typename T>
decltype(auto) CatArg(const T& v) {
  if constexpr (std::is_convertible_v<const T&, std::string_view> &&
                !std::is_convertible_v<const T&, absl::string_view>) {
    return AV(v);
  } else {
    return (v);
  }
}
// absl::StrCat that also takes std::string_view.
template <typename... A>
std::string Cat(const A&... args) {
  return absl::StrCat(CatArg(args)...);
}

}  // namespace ballast::base

#endif  // BALLAST_AGENT_BASE_STRCAT_H_
