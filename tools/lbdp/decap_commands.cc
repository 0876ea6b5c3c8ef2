// lbdp decap: the backend side (tools/lbdp/decap_commands.h).
#include "tools/lbdp/decap_commands.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string_view>

#include "agent/base/ip_prefix.h"
#include "agent/base/strcat.h"
#include "agent/dataplane/decap.h"
#include "agent/dataplane/verdict.h"

namespace ballast::lbdp {
namespace {

using base::Cat;
using dataplane::AttachModeName;
using dataplane::Decap;
using dataplane::DecapVerdictName;
using dataplane::ParseAttachMode;

// "any" alone, or addresses without it: true = any (no check).
absl::StatusOr<bool> AnyOf(const std::vector<std::string>& v, std::string_view flag) {
  const bool any = std::find(v.begin(), v.end(), "any") != v.end();
  if (any && v.size() > 1) {
    return absl::InvalidArgumentError(
        Cat(flag, " any cannot be combined with addresses (any allows every one)"));
  }
  return any;
}

// A unicast address for `flag`, or why not.
absl::StatusOr<IpAddress> UnicastOf(std::string_view flag, const std::string& text) {
  auto ip = IpAddress::Parse(text);
  if (!ip.ok()) {
    return absl::InvalidArgumentError(
        Cat(flag, ": '", text, "' is not a unicast IPv4 or IPv6 address"));
  }
  if (ip->is_v4_mapped()) {
    const auto& b = ip->bytes();
    return absl::InvalidArgumentError(
        Cat(flag, ": '", text, "' is an IPv4 address written as IPv6: write ", int{b[12]}, ".",
            int{b[13]}, ".", int{b[14]}, ".", int{b[15]}));
  }
  const auto& b = ip->bytes();
  const bool broadcast = ip->is_v4() && b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255;
  const char* why = ip->is_unspecified() ? "unspecified"
                    : ip->is_multicast() ? "multicast"
                    : broadcast          ? "broadcast"
                    : ip->is_loopback()  ? "loopback"
                                         : nullptr;
  if (why != nullptr) {
    return absl::InvalidArgumentError(
        Cat(flag, ": '", text, "' is not a unicast address (", why, ")"));
  }
  return *ip;
}

}  // namespace

absl::StatusOr<DecapLists> CheckDecapLists(const DecapAttachArgs& a) {
  DecapLists out;
  for (const std::string& s : a.addrs) {
    auto ip = UnicastOf("--addr", s);
    if (!ip.ok()) return ip.status();
    out.addrs.push_back(*ip);
  }
  auto any_source = AnyOf(a.sources, "--from");
  if (!any_source.ok()) return any_source.status();
  out.any_source = *any_source;
  if (!out.any_source) {
    for (const std::string& s : a.sources) {
      auto p = IpPrefix::Parse(s);
      if (!p.ok() || p->address().is_v4_mapped()) {
        return absl::InvalidArgumentError(
            Cat("--from: '", s, "' is not an address or prefix (198.18.0.1/32, 2001:db8::/64)"));
      }
    }
  }
  auto any_vip = AnyOf(a.vips, "--vip");
  if (!any_vip.ok()) return any_vip.status();
  out.any_vip = *any_vip;
  if (!out.any_vip) {
    for (const std::string& s : a.vips) {
      auto ip = UnicastOf("--vip", s);
      if (!ip.ok()) return ip.status();
      if (std::find(out.addrs.begin(), out.addrs.end(), *ip) != out.addrs.end()) {
        return absl::InvalidArgumentError(Cat("--vip: '", s, "' is also given as --addr"));
      }
      out.vips.push_back(*ip);
    }
  }
  return out;
}

int CmdDecapCheck(const DecapAttachArgs& a) {
  auto lists = CheckDecapLists(a);
  if (!lists.ok()) return Fail(lists.status());
  printf("decap lists are valid: %zu addresses, %s, %s\n", lists->addrs.size(),
         lists->any_source ? "any source" : Cat(a.sources.size(), " sources").c_str(),
         lists->any_vip ? "any VIP" : Cat(lists->vips.size(), " VIPs").c_str());
  return kOk;
}

int CmdDecapAttach(const Global& g, const std::string& dev, const DecapAttachArgs& a) {
  auto mode = ParseAttachMode(a.mode);
  if (!mode.ok()) return Fail(mode.status());
  auto lists = CheckDecapLists(a);
  if (!lists.ok()) return Fail(lists.status());
  const std::vector<IpAddress>& ips = lists->addrs;
  const std::vector<IpAddress>& vips = lists->vips;
  const bool any_source = lists->any_source, any_vip = lists->any_vip;
  if (absl::Status s = EnterNetns(g.netns); !s.ok()) return Fail(s);
  auto d = Decap::Load();
  if (!d.ok()) return Fail(d.status());
  for (const IpAddress& ip : ips) {
    if (absl::Status s = (*d)->AddAddress(ip); !s.ok()) return Fail(s);
  }
  if (!any_source) {
    for (const std::string& s : a.sources) {
      if (absl::Status st = (*d)->AddSource(s); !st.ok()) return Fail(st);
    }
  }
  for (const IpAddress& ip : vips) {
    if (absl::Status s = (*d)->AddVip(ip); !s.ok()) return Fail(s);
  }
  if (a.no_bounce) {
    if (absl::Status s = (*d)->SetBounce(false); !s.ok()) return Fail(s);
  }
  if (a.gue_port != 0) {
    if (absl::Status s = (*d)->SetGuePort(a.gue_port); !s.ok()) return Fail(s);
  }
  if (any_source || any_vip) {
    fprintf(stderr,
            "lbdp: warning: decap on %s accepts %s: an open tunnel for whoever can reach this "
            "host's addresses\n",
            dev.c_str(),
            any_source && any_vip ? "any source and any inner destination"
            : any_source          ? "any source"
                                  : "any inner destination");
  }
  auto used = (*d)->Attach(dev, *mode);
  if (!used.ok()) return Fail(used.status());
  printf("xdp_decap attached to dev %s in %s mode for", dev.c_str(),
         std::string(AttachModeName(*used)).c_str());
  for (const IpAddress& ip : ips) printf(" %s", ip.ToString().c_str());
  if (a.gue_port != 0) printf(" (GUE on UDP port %u)", a.gue_port);
  printf("%s\n", a.no_bounce ? " (second chance off)" : "");
  return kOk;
}

int CmdDecapDetach(const Global& g, const std::string& dev) {
  if (absl::Status s = EnterNetns(g.netns); !s.ok()) return Fail(s);
  if (absl::Status s = Decap::DetachFrom(dev); !s.ok()) return Fail(s);
  printf("xdp_decap detached from dev %s\n", dev.c_str());
  return kOk;
}

int CmdDecapStats(const Global& g, const std::string& dev) {
  if (absl::Status s = EnterNetns(g.netns); !s.ok()) return Fail(s);
  auto d = Decap::FromDevice(dev);
  if (!d.ok()) return Fail(d.status());
  auto st = (*d)->Stats();
  if (!st.ok()) return Fail(st.status());
  auto addrs = (*d)->Addresses();
  if (!addrs.ok()) return Fail(addrs.status());
  auto holds = Decap::HoldsRsts(dev);
  if (!holds.ok()) return Fail(holds.status());
  printf("addresses:");
  for (const IpAddress& ip : *addrs) printf(" %s", ip.ToString().c_str());
  printf("\n");
  printf("rst hold (tc egress): %s\n", *holds ? "on" : "off");
  for (int v = 0; v < BALLAST_DECAP_V_MAX; ++v) {
    printf("%s %" PRIu64 "\n",
           std::string(DecapVerdictName(static_cast<ballast_decap_verdict>(v))).c_str(),
           static_cast<uint64_t>((*st)[v]));
  }
  return kOk;
}

}  // namespace ballast::lbdp
