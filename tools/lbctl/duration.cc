#include "tools/lbctl/duration.h"

#include <limits>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ballast::lbctl {

absl::StatusOr<absl::Duration> ParseDuration(absl::string_view text, absl::string_view flag) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", text, "' ", why, ": write e.g. 500ms, 60s, 5m, 1h30m or 2d"));
  };
  if (text.empty()) return bad("is empty");
  uint64_t secs = 0;
  if (absl::SimpleAtoi(text, &secs)) return absl::Seconds(static_cast<int64_t>(secs));
  // absl::ParseDuration knows h/m/s/ms/us/ns; add days in front of it.
  absl::Duration total = absl::ZeroDuration();
  absl::string_view rest = text;
  if (size_t d = rest.find('d'); d != absl::string_view::npos) {
    uint64_t days = 0;
    if (!absl::SimpleAtoi(rest.substr(0, d), &days) || days > 36500) return bad("is not valid");
    total += absl::Hours(24 * static_cast<int64_t>(days));
    rest = rest.substr(d + 1);
  }
  if (!rest.empty()) {
    absl::Duration part;
    if (!absl::ParseDuration(std::string(rest), &part)) return bad("is not valid");
    if (part == absl::InfiniteDuration()) return bad("is infinite");
    total += part;
  }
  if (total < absl::ZeroDuration()) return bad("is negative");
  return total;
}

absl::StatusOr<uint32_t> ParseWholeSeconds(absl::string_view text, absl::string_view flag) {
  absl::StatusOr<absl::Duration> d = ParseDuration(text, flag);
  if (!d.ok()) return d.status();
  if (*d % absl::Seconds(1) != absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", text, "' is not a whole number of seconds"));
  }
  const int64_t s = absl::ToInt64Seconds(*d);
  if (s > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " '", text, "' is too long"));
  }
  return static_cast<uint32_t>(s);
}

}  // namespace ballast::lbctl
