// docs/health.md's parameter table says what params.h defines: for every
// integer setting with a range in health::ranges, its row shows the
// Params default and that range. A range changed in the code and not in
// the docs (or the reverse) fails here.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "agent/health/params.h"

namespace ballast::health {
namespace {

std::string ReadDocs() {
  const std::string path = std::string(BALLAST_SOURCE_DIR) + "/docs/health.md";
  std::ifstream in(path);
  INFO(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The table row of `name`: "| `name` | default | range | meaning |".
std::string Row(const std::string& docs, std::string_view name) {
  const std::string start = "\n| `" + std::string(name) + "` |";
  const size_t at = docs.find(start);
  if (at == std::string::npos) return "";
  return docs.substr(at + 1, docs.find('\n', at + 1) - at - 1);
}

TEST_CASE("docs/health.md shows each integer setting's default and range", "[params][docs]") {
  const std::string docs = ReadDocs();
  const Params d;
  const struct {
    SettingRange range;
    int default_value;
  } settings[] = {
      {ranges::kGoodScore, d.good_score},
      {ranges::kBadScore, d.bad_score},
      {ranges::kDemoteAfter, d.demote_after},
      {ranges::kPromoteAfter, d.promote_after},
      {ranges::kRampHold, d.ramp_hold},
      {ranges::kRampSagScore, d.ramp_sag_score},
      {ranges::kPinFlaps, d.pin_flaps},
      {ranges::kFleetGuardPercent, d.fleet_guard_percent},
      {ranges::kUnfreezeAfter, d.unfreeze_after},
      {ranges::kMinSamples, d.min_samples},
      {ranges::kRefusedDemote, d.refused_demote},
  };
  for (const auto& s : settings) {
    INFO(s.range.name);
    const std::string row = Row(docs, s.range.name);
    REQUIRE(!row.empty());
    const std::string want = "| `" + std::string(s.range.name) + "` | " +
                             std::to_string(s.default_value) + " | " + std::to_string(s.range.lo) +
                             ".." + std::to_string(s.range.hi);
    CHECK(row.rfind(want, 0) == 0);
  }
}

}  // namespace
}  // namespace ballast::health
