#include "tools/lbctl/suggest.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ballast::lbctl {

size_t EditDistance(absl::string_view a, absl::string_view b) {
  // d[i][j]: distance between a's first i and b's first j characters.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::vector<std::string> Suggest(absl::string_view typed,
                                 const std::vector<std::string>& candidates) {
  const size_t limit = std::min<size_t>(2, typed.size() / 2);
  size_t best = limit + 1;
  std::vector<std::string> out;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(typed, c);
    if (d > limit || d > best) continue;
    if (d < best) out.clear();
    best = d;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  if (!out.empty() || typed.size() < 2) return out;
  for (const std::string& c : candidates) {
    if (absl::StartsWith(c, typed) && std::find(out.begin(), out.end(), c) == out.end()) {
      out.push_back(c);
    }
  }
  return out;
}

std::string DidYouMean(const std::vector<std::string>& suggestions) {
  if (suggestions.empty()) return "";
  const std::string quoted = absl::StrJoin(
      suggestions, ", ",
      [](std::string* out, const std::string& s) { absl::StrAppend(out, "\"", s, "\""); });
  return absl::StrCat(suggestions.size() == 1 ? "; did you mean " : "; did you mean one of ",
                      quoted, "?");
}

}  // namespace ballast::lbctl
