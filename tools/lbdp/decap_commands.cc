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

// Why `ip` is no unicast address of its own ("multicast"), or why it is
// written wrong (::ffff:a.b.c.d); empty when it is one.
std::string NotUnicast(const IpAddress& ip) {
  const auto& b = ip.bytes();
  if (ip.is_v4_mapped()) {
    return Cat("is an IPv4 address written as IPv6: write ", int{b[12]}, ".", int{b[13]}, ".",
               int{b[14]}, ".", int{b[15]});
  }
  const bool broadcast = ip.is_v4() && b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255;
  const char* why = ip.is_unspecified() ? "unspecified"
                    : ip.is_multicast() ? "multicast"
                    : broadcast         ? "broadcast"
                    : ip.is_loopback()  ? "loopback"
                                        : nullptr;
  return why == nullptr ? "" : Cat("is not a unicast address (", why, ")");
}

// A unicast address for `flag`, or why not.
absl::StatusOr<IpAddress> UnicastOf(std::string_view flag, const std::string& text) {
  auto ip = IpAddress::Parse(text);
  if (!ip.ok()) {
    return absl::InvalidArgumentError(
        Cat(flag, ": '", text, "' is not a unicast IPv4 or IPv6 address"));
  }
  if (std::string why = NotUnicast(*ip); !why.empty()) {
    return absl::InvalidArgumentError(Cat(flag, ": '", text, "' ", why));
  }
  return *ip;
}

template <typename T>
bool Has(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Adds the --vip `text` to `out` (its --addr list filled): a VIP key, or an
// address alone.
absl::Status AddVipArg(const std::string& text, DecapLists& out) {
  const bool whole = text.find('/') == std::string::npos;
  IpAddress ip;
  if (whole) {
    if (!IpAddress::Parse(text).ok()) {
      return absl::InvalidArgumentError(
          Cat("--vip: '", text,
              "' is neither an address nor ADDR:PORT/PROTO (198.18.0.10:80/tcp, "
              "[2001:db8::10]:443/udp, 198.18.0.10:0/tcp for every port)"));
    }
    auto unicast = UnicastOf("--vip", text);
    if (!unicast.ok()) return unicast.status();
    ip = *unicast;
  } else {
    auto key = dataplane::ParseVipKey(text);
    if (!key.ok()) return absl::InvalidArgumentError(Cat("--vip: ", key.status().message()));
    if (std::string why = NotUnicast(key->addr); !why.empty()) {
      return absl::InvalidArgumentError(Cat("--vip: '", text, "': its address ", why));
    }
    ip = key->addr;
    if (!Has(out.vips, *key)) out.vips.push_back(*key);
  }
  if (Has(out.addrs, ip)) {
    return absl::InvalidArgumentError(Cat("--vip: '", text, "' is also given as --addr"));
  }
  const bool given_alone = Has(out.whole_vips, ip);
  const bool given_with_ports = Has(out.vip_addresses, ip) && !given_alone;
  if ((whole && given_with_ports) || (!whole && given_alone)) {
    return absl::InvalidArgumentError(Cat("--vip: '", text, "': ", ip.ToString(),
                                          " is given both alone (every port) and ",
                                          "with ports; give its ports, or the address alone"));
  }
  if (whole && !given_alone) out.whole_vips.push_back(ip);
  if (!Has(out.vip_addresses, ip)) out.vip_addresses.push_back(ip);
  return absl::OkStatus();
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
  if (out.any_vip) return out;
  for (const std::string& s : a.vips) {
    if (absl::Status st = AddVipArg(s, out); !st.ok()) return st;
  }
  const size_t entries = out.vip_addresses.size() + out.vips.size();
  if (entries > BALLAST_DECAP_MAX_VIPS) {
    return absl::InvalidArgumentError(
        Cat("--vip: ", entries, " entries (one per address, one per port) are more than the ",
            BALLAST_DECAP_MAX_VIPS, " the decap program holds"));
  }
  for (const IpAddress& ip : out.whole_vips) {
    const std::string t = ip.ToString(), k = ip.is_v4() ? t : Cat("[", t, "]");
    out.warnings.push_back(
        Cat("--vip: '", t, "' names no protocol and port: every packet to ", t,
            " gets through the tunnel, as before ports could be given; name what its VIPs "
            "serve (",
            k, ":80/tcp, ", k, ":0/udp for every UDP port)"));
  }
  return out;
}

namespace {

void PrintWarnings(const DecapLists& lists) {
  for (const std::string& w : lists.warnings) fprintf(stderr, "lbdp: warning: %s\n", w.c_str());
}

}  // namespace

int CmdDecapCheck(const DecapAttachArgs& a, bool print_vip_addresses) {
  auto lists = CheckDecapLists(a);
  if (!lists.ok()) return Fail(lists.status());
  PrintWarnings(*lists);
  if (print_vip_addresses) {
    for (const IpAddress& ip : lists->vip_addresses) printf("%s\n", ip.ToString().c_str());
    return kOk;
  }
  printf("decap lists are valid: %zu addresses, %s, %s\n", lists->addrs.size(),
         lists->any_source ? "any source" : Cat(a.sources.size(), " sources").c_str(),
         lists->any_vip ? "any VIP" : Cat(a.vips.size(), " VIPs").c_str());
  return kOk;
}

int CmdDecapAttach(const Global& g, const std::string& dev, const DecapAttachArgs& a) {
  auto mode = ParseAttachMode(a.mode);
  if (!mode.ok()) return Fail(mode.status());
  auto lists = CheckDecapLists(a);
  if (!lists.ok()) return Fail(lists.status());
  const std::vector<IpAddress>& ips = lists->addrs;
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
  for (const IpAddress& ip : lists->whole_vips) {
    if (absl::Status s = (*d)->AddVipAddress(ip); !s.ok()) return Fail(s);
  }
  for (const dataplane::VipKey& k : lists->vips) {
    if (absl::Status s = (*d)->AddVip(k); !s.ok()) return Fail(s);
  }
  if (a.no_bounce) {
    if (absl::Status s = (*d)->SetBounce(false); !s.ok()) return Fail(s);
  }
  if (a.gue_port != 0) {
    if (absl::Status s = (*d)->SetGuePort(a.gue_port); !s.ok()) return Fail(s);
  }
  PrintWarnings(*lists);
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
  auto vips = (*d)->Vips();
  if (!vips.ok()) return Fail(vips.status());
  printf("addresses:");
  for (const IpAddress& ip : *addrs) printf(" %s", ip.ToString().c_str());
  printf("\n");
  // A VIP given alone (proto 0) takes every port and protocol of its address.
  printf("vips:%s", vips->empty() ? " any (no check)" : "");
  for (const dataplane::VipKey& k : *vips) {
    printf(" %s",
           (k.proto != 0 ? dataplane::VipKeyString(k) : Cat(k.addr.ToString(), ":*/*")).c_str());
  }
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
