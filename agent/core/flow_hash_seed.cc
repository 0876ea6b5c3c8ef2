#include "agent/core/flow_hash_seed.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/dataplane/bpf_util.h"
#include "ballast_flow_hash.h"

namespace ballast::core {
namespace {

dataplane::HashSeed WordsOf(const google::protobuf::RepeatedField<uint32_t>& w) {
  return {w.Get(0), w.Get(1), w.Get(2)};
}

void SetWords(const dataplane::HashSeed& seed, google::protobuf::RepeatedField<uint32_t>* w) {
  w->Clear();
  w->Add(seed.begin(), seed.end());
}

}  // namespace

absl::StatusOr<dataplane::HashSeed> RandomSeed() {
  dataplane::HashSeed seed;
  if (getrandom(seed.data(), sizeof(seed), 0) != static_cast<ssize_t>(sizeof(seed))) {
    return dataplane::ErrnoStatus(errno, "drawing a flow hash seed (getrandom)");
  }
  return seed;
}

v1::FlowHashSeed FirstFlowHashSeed(const dataplane::HashSeed& fresh, int64_t now_ms) {
  v1::FlowHashSeed out;
  SetWords(fresh, out.mutable_current());
  out.set_rotated_unix_ms(now_ms);
  return out;
}

v1::FlowHashSeed RotatedFlowHashSeed(const v1::FlowHashSeed& seed, const dataplane::HashSeed& fresh,
                                     int64_t now_ms) {
  const ballast_hash_seed public_seed = BALLAST_PUBLIC_SEED_INIT;
  v1::FlowHashSeed out = FirstFlowHashSeed(fresh, now_ms);
  SetWords(SeedIsPublic(seed) ? std::to_array(public_seed.w) : WordsOf(seed.current()),
           out.mutable_previous());
  return out;
}

bool SeedIsPublic(const v1::FlowHashSeed& seed) { return seed.current_size() == 0; }

dataplane::FlowHashSeed DataplaneSeedOf(const v1::FlowHashSeed& seed) {
  dataplane::FlowHashSeed out;
  if (seed.current_size() == 3) out.current = WordsOf(seed.current());
  if (seed.previous_size() == 3) out.previous = WordsOf(seed.previous());
  return out;
}

absl::Status ValidateFlowHashSeed(const v1::FlowHashSeed& seed) {
  for (const auto& [name, n] :
       {std::pair{"current", seed.current_size()}, std::pair{"previous", seed.previous_size()}}) {
    if (n != 0 && n != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("flow_hash_seed.", name, " has ", n, " words; a seed has 3 (or none)"));
    }
  }
  if (seed.current_size() == 0 && seed.previous_size() != 0) {
    return absl::InvalidArgumentError("flow_hash_seed.previous without a current seed");
  }
  return absl::OkStatus();
}

absl::StatusOr<dataplane::FlowHashSeed> ParseFlowHashSeedFile(absl::string_view text) {
  std::vector<dataplane::HashSeed> seeds;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_no, ": ", why, " (a seed is 24 hex digits: 96 bits)"));
    };
    if (line.size() != 24) return bad(absl::StrCat(line.size(), " characters"));
    dataplane::HashSeed seed;
    for (size_t w = 0; w < 3; ++w) {
      const absl::string_view word = line.substr(w * 8, 8);
      // SimpleHexAtoi also takes a sign and "0x": a seed word is hex digits only.
      if (!std::all_of(word.begin(), word.end(), absl::ascii_isxdigit) ||
          !absl::SimpleHexAtoi(word, &seed[w])) {
        return bad("not a hex digit");
      }
    }
    seeds.push_back(seed);
  }
  if (seeds.empty())
    return absl::InvalidArgumentError("no seed (a seed is 24 hex digits: 96 bits)");
  if (seeds.size() > 2) {
    return absl::InvalidArgumentError("more than two seeds (the current one, then the previous)");
  }
  dataplane::FlowHashSeed out;
  out.current = seeds[0];
  if (seeds.size() == 2) out.previous = seeds[1];
  return out;
}

}  // namespace ballast::core
