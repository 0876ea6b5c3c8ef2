#include "tools/lbctl/rates.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/lbctl/address.h"
#include "tools/lbctl/format.h"

namespace ballast::lbctl {
namespace {

// "12.5k"-style rate, or "-" when there is no previous value or it went
// backwards.
std::string Rate(const uint64_t* before, uint64_t now, double seconds) {
  if (before == nullptr || now < *before || seconds <= 0) return "-";
  const double r = static_cast<double>(now - *before) / seconds;
  if (r < 1000) return absl::StrFormat("%.1f", r);
  if (r < 1e6) return absl::StrFormat("%.1fk", r / 1e3);
  return absl::StrFormat("%.2fM", r / 1e6);
}

struct Before {
  uint64_t packets = 0;
  uint64_t new_flows = 0;
};

}  // namespace

std::string FormatRates(const v1::StatusResponse& prev, const v1::StatusResponse& cur,
                        double seconds) {
  std::map<std::string, uint64_t> vip_packets;
  std::map<std::pair<std::string, std::string>, Before> backends;
  for (const v1::VipStatus& v : prev.vips()) {
    const std::string key = FormatVipKey(v.key());
    vip_packets[key] = v.packets();
    for (const v1::BackendStatus& b : v.backends()) {
      backends[{key, b.address()}] = {b.counters().packets(), b.counters().new_flows()};
    }
  }
  Table t({"VIP / BACKEND", "PACKETS/S", "NEW FLOWS/S"});
  t.SetNumeric({false, true, true});
  for (const v1::VipStatus& v : cur.vips()) {
    const std::string key = FormatVipKey(v.key());
    auto vp = vip_packets.find(key);
    uint64_t vip_new = 0;
    const uint64_t* vip_new_before = nullptr;
    uint64_t new_before_sum = 0;
    bool all_known = vp != vip_packets.end();
    for (const v1::BackendStatus& b : v.backends()) {
      vip_new += b.counters().new_flows();
      auto it = backends.find({key, b.address()});
      if (it == backends.end() || b.counters().new_flows() < it->second.new_flows) {
        all_known = false;
      } else {
        new_before_sum += it->second.new_flows;
      }
    }
    if (all_known) vip_new_before = &new_before_sum;
    t.AddRow({key, Rate(vp == vip_packets.end() ? nullptr : &vp->second, v.packets(), seconds),
              Rate(vip_new_before, vip_new, seconds)});
    for (const v1::BackendStatus& b : v.backends()) {
      auto it = backends.find({key, b.address()});
      const Before* before = it == backends.end() ? nullptr : &it->second;
      t.AddRow({"  " + b.address(),
                Rate(before ? &before->packets : nullptr, b.counters().packets(), seconds),
                Rate(before ? &before->new_flows : nullptr, b.counters().new_flows(), seconds)});
    }
  }
  return absl::StrCat(absl::StrFormat("RATES over the last %.1f s:\n", seconds), t.Render());
}

}  // namespace ballast::lbctl
