// lbctl status --watch's rates between two snapshots (pure).
#include <catch2/catch.hpp>
#include <google/protobuf/text_format.h>

#include "tools/lbctl/rates.h"

namespace ballast::lbctl {
namespace {

v1::StatusResponse Parse(const std::string& text) {
  v1::StatusResponse r;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &r));
  return r;
}

std::string Snapshot(int vip_packets, int a_packets, int a_new, int b_packets, int b_new) {
  return "vips { key { address: '198.18.0.10' port: 80 protocol: TCP } packets: " +
         std::to_string(vip_packets) +
         " backends { address: '198.18.1.1' counters { packets: " + std::to_string(a_packets) +
         " new_flows: " + std::to_string(a_new) +
         " } } backends { address: '198.18.1.2' counters { packets: " + std::to_string(b_packets) +
         " new_flows: " + std::to_string(b_new) + " } } }";
}

TEST_CASE("Rates per VIP and backend over the interval") {
  const std::string out = FormatRates(Parse(Snapshot(1000, 600, 10, 400, 10)),
                                      Parse(Snapshot(5000, 3100, 30, 1900, 50)), 2.0);
  INFO(out);
  CHECK(out.rfind("RATES over the last 2.0 s:\n", 0) == 0);
  CHECK_THAT(out, Catch::Contains("VIP / BACKEND"));
  // VIP: 4000 packets / 2 s, (30 + 50) - (10 + 10) new flows / 2 s.
  CHECK_THAT(out, Catch::Matches("(.|\n)*198\\.18\\.0\\.10:80/tcp +2\\.0k +30\\.0\n(.|\n)*"));
  CHECK_THAT(out, Catch::Matches("(.|\n)*  198\\.18\\.1\\.1 +1\\.2k +10\\.0\n(.|\n)*"));
  CHECK_THAT(out, Catch::Matches("(.|\n)*  198\\.18\\.1\\.2 +750\\.0 +20\\.0\n(.|\n)*"));
}

TEST_CASE("A backend new since the last snapshot, or one whose counters restarted, shows '-'") {
  v1::StatusResponse prev = Parse(Snapshot(1000, 600, 10, 400, 10));
  prev.mutable_vips(0)->mutable_backends()->RemoveLast();
  const std::string out = FormatRates(prev, Parse(Snapshot(2000, 100, 5, 900, 15)), 1.0);
  INFO(out);
  // 198.18.1.1's counters went backwards (deleted and added again).
  CHECK_THAT(out, Catch::Matches("(.|\n)*  198\\.18\\.1\\.1 +- +-\n(.|\n)*"));
  CHECK_THAT(out, Catch::Matches("(.|\n)*  198\\.18\\.1\\.2 +- +-\n(.|\n)*"));
  // The VIP's packets are known; its new flows are not (a backend is unknown).
  CHECK_THAT(out, Catch::Matches("(.|\n)*198\\.18\\.0\\.10:80/tcp +1\\.0k +-\n(.|\n)*"));
}

TEST_CASE("A VIP new since the last snapshot shows '-'") {
  const std::string out = FormatRates(v1::StatusResponse(), Parse(Snapshot(10, 5, 1, 5, 1)), 1.0);
  CHECK_THAT(out, Catch::Matches("(.|\n)*198\\.18\\.0\\.10:80/tcp +- +-\n(.|\n)*"));
}

}  // namespace
}  // namespace ballast::lbctl
