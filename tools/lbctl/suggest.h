// "Did you mean": the known words closest to a mistyped one, for lbctl's
// messages about unknown commands and options (as kubectl and cilium say
// them). Pure.
#ifndef BALLAST_TOOLS_LBCTL_SUGGEST_H_
#define BALLAST_TOOLS_LBCTL_SUGGEST_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ballast::lbctl {

// Edit distance where a swap of two adjacent characters counts once
// (optimal string alignment): "stauts" is 1 from "status".
size_t EditDistance(absl::string_view a, absl::string_view b);

// The candidates closest to `typed`: those at the smallest edit distance,
// if it is at most 2 and at most half of `typed`'s length (so "ab" is not
// taken for "vip"), else those `typed` is a prefix of (at least 2
// characters); in the candidates' order. Empty when nothing is close.
std::vector<std::string> Suggest(absl::string_view typed,
                                 const std::vector<std::string>& candidates);

// `; did you mean "status"?` or `; did you mean one of "del", "dev"?`, or ""
// when there is nothing to suggest (for the end of a sentence).
std::string DidYouMean(const std::vector<std::string>& suggestions);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_SUGGEST_H_
