#include "agent/probes/rtnl.h"

#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "agent/dataplane/bpf_util.h"
#include "agent/base/strcat.h"

namespace ballast::probes::rtnl {
namespace {

using base::Cat;
using dataplane::ErrnoStatus;
using dataplane::UniqueFd;

// A netlink request under construction: header, family header, attributes.
class Request {
 public:
  Request(uint16_t type, uint16_t flags, const void* fam, size_t fam_len) {
    buf_.resize(NLMSG_LENGTH(fam_len));
    auto* h = hdr();
    h->nlmsg_type = type;
    h->nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
    h->nlmsg_seq = 1;
    std::memcpy(NLMSG_DATA(h), fam, fam_len);
    h->nlmsg_len = static_cast<uint32_t>(buf_.size());
  }
  void Attr(uint16_t type, const void* data, size_t len) {
    const size_t off = NLMSG_ALIGN(buf_.size());
    buf_.resize(off + RTA_SPACE(len));
    auto* rta = reinterpret_cast<rtattr*>(buf_.data() + off);
    rta->rta_type = type;
    rta->rta_len = static_cast<uint16_t>(RTA_LENGTH(len));
    std::memcpy(RTA_DATA(rta), data, len);
    hdr()->nlmsg_len = static_cast<uint32_t>(buf_.size());
  }
  void U32(uint16_t type, uint32_t v) { Attr(type, &v, sizeof(v)); }
  void Addr(uint16_t type, const IpAddress& a) { Attr(type, a.bytes().data(), a.is_v4() ? 4 : 16); }
  nlmsghdr* hdr() { return reinterpret_cast<nlmsghdr*>(buf_.data()); }
  const std::vector<char>& bytes() const { return buf_; }

 private:
  std::vector<char> buf_;
};

// Sends the request and returns the kernel's answer (0 or -errno) as a Status.
absl::Status Transact(Request& req, const std::string& what) {
  UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd) return ErrnoStatus(errno, Cat(what, ": opening a netlink socket"));
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd.get(), req.bytes().data(), req.bytes().size(), 0,
             reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
    return ErrnoStatus(errno, Cat(what, ": sending to netlink"));
  }
  alignas(nlmsghdr) char buf[8192];
  for (;;) {
    const ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, Cat(what, ": reading the netlink answer"));
    }
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        if (err->error == 0) return absl::OkStatus();
        return ErrnoStatus(-err->error, what);
      }
    }
  }
}

const char* FamilyName(int family) { return family == AF_INET ? "IPv4" : "IPv6"; }

absl::Status Rule(uint16_t type, uint16_t flags, int family, uint32_t mark, uint32_t mask,
                  uint32_t table, uint32_t priority, const std::string& what) {
  fib_rule_hdr frh{};
  frh.family = static_cast<uint8_t>(family);
  frh.action = FR_ACT_TO_TBL;
  frh.table = table < 256 ? static_cast<uint8_t>(table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
  Request req(type, flags, &frh, sizeof(frh));
  req.U32(FRA_FWMARK, mark);
  req.U32(FRA_FWMASK, mask);
  req.U32(FRA_TABLE, table);
  req.U32(FRA_PRIORITY, priority);
  return Transact(req, what);
}

std::string RuleText(int family, uint32_t mark, uint32_t mask, uint32_t table, uint32_t prio) {
  char buf[128];
  snprintf(buf, sizeof(buf), "%s rule fwmark 0x%x/0x%x lookup %u priority %u", FamilyName(family),
           mark, mask, table, prio);
  return buf;
}

}  // namespace

absl::Status AddFwmarkRule(int family, uint32_t mark, uint32_t mask, uint32_t table,
                           uint32_t priority) {
  return Rule(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, family, mark, mask, table, priority,
              Cat("adding ", RuleText(family, mark, mask, table, priority)));
}

absl::Status DeleteFwmarkRule(int family, uint32_t mark, uint32_t mask, uint32_t table,
                              uint32_t priority) {
  return Rule(RTM_DELRULE, 0, family, mark, mask, table, priority,
              Cat("deleting ", RuleText(family, mark, mask, table, priority)));
}

absl::Status ReplaceDefaultRoute(int family, uint32_t table, const std::optional<IpAddress>& gw,
                                 int oif, const std::optional<IpAddress>& prefsrc, uint32_t mtu,
                                 bool onlink) {
  rtmsg rtm{};
  rtm.rtm_family = static_cast<uint8_t>(family);
  if (onlink && gw) rtm.rtm_flags = RTNH_F_ONLINK;
  rtm.rtm_table = table < 256 ? static_cast<uint8_t>(table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
  rtm.rtm_protocol = RTPROT_STATIC;
  rtm.rtm_scope = RT_SCOPE_UNIVERSE;
  rtm.rtm_type = gw ? RTN_UNICAST : RTN_UNREACHABLE;
  Request req(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &rtm, sizeof(rtm));
  req.U32(RTA_TABLE, table);
  std::string what;
  if (gw) {
    if ((family == AF_INET) != gw->is_v4()) {
      return absl::InvalidArgumentError(
          Cat("gateway ", gw->ToString(), " is not an ", FamilyName(family), " address"));
    }
    req.Addr(RTA_GATEWAY, *gw);
    req.U32(RTA_OIF, static_cast<uint32_t>(oif));
    if (prefsrc && !prefsrc->is_unspecified()) req.Addr(RTA_PREFSRC, *prefsrc);
    if (mtu != 0) {
      alignas(rtattr) char nest[RTA_SPACE(sizeof(uint32_t))];
      auto* m = reinterpret_cast<rtattr*>(nest);
      m->rta_type = RTAX_MTU;
      m->rta_len = RTA_LENGTH(sizeof(uint32_t));
      std::memcpy(RTA_DATA(m), &mtu, sizeof(mtu));
      req.Attr(RTA_METRICS, nest, sizeof(nest));
    }
    what = Cat("adding ", FamilyName(family), " route default via ", gw->ToString(), " (ifindex ",
               oif, ") table ", table,
               prefsrc && !prefsrc->is_unspecified() ? Cat(" src ", prefsrc->ToString()) : "");
  } else {
    what = Cat("adding ", FamilyName(family), " route unreachable default table ", table);
  }
  return Transact(req, what);
}

absl::Status DeleteDefaultRoute(int family, uint32_t table) {
  rtmsg rtm{};
  rtm.rtm_family = static_cast<uint8_t>(family);
  rtm.rtm_table = table < 256 ? static_cast<uint8_t>(table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
  rtm.rtm_scope = RT_SCOPE_NOWHERE;
  Request req(RTM_DELROUTE, 0, &rtm, sizeof(rtm));
  req.U32(RTA_TABLE, table);
  return Transact(req, Cat("deleting ", FamilyName(family), " default route of table ", table));
}

namespace {

absl::Status Neighbour(uint16_t type, uint16_t flags, int ifindex, const IpAddress& addr,
                       const std::array<uint8_t, 6>* mac, const std::string& what) {
  ndmsg nd{};
  nd.ndm_family = static_cast<uint8_t>(addr.is_v4() ? AF_INET : AF_INET6);
  nd.ndm_ifindex = ifindex;
  nd.ndm_state = NUD_PERMANENT;
  Request req(type, flags, &nd, sizeof(nd));
  req.Addr(NDA_DST, addr);
  if (mac != nullptr) req.Attr(NDA_LLADDR, mac->data(), mac->size());
  return Transact(req, what);
}

}  // namespace

absl::Status ReplacePermanentNeighbour(int ifindex, const IpAddress& addr,
                                       const std::array<uint8_t, 6>& mac) {
  return Neighbour(
      RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, ifindex, addr, &mac,
      Cat("adding the permanent neighbour ", addr.ToString(), " on ifindex ", ifindex));
}

absl::Status DeleteNeighbour(int ifindex, const IpAddress& addr) {
  return Neighbour(RTM_DELNEIGH, 0, ifindex, addr, nullptr,
                   Cat("deleting the neighbour ", addr.ToString(), " on ifindex ", ifindex));
}

namespace {

// The kernel's answer to one RTM_GETROUTE (sequence `seq`) on `fd`.
RouteDevice ReadRouteAnswer(int fd, uint32_t seq) {
  alignas(nlmsghdr) char buf[8192];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return {"", std::string(ErrnoStatus(errno, "reading the netlink answer").message())};
    }
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_seq != seq) continue;  // a late answer to an earlier request
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        return {"", err->error == 0 ? std::string("no route in the answer")
                                    : std::string(std::strerror(-err->error))};
      }
      if (h->nlmsg_type != RTM_NEWROUTE) continue;
      const auto* rtm = static_cast<const rtmsg*>(NLMSG_DATA(h));
      if (rtm->rtm_type == RTN_LOCAL) return {"", "an address of this host"};
      if (rtm->rtm_type != RTN_UNICAST) return {"", Cat("route type ", rtm->rtm_type)};
      int rlen = static_cast<int>(RTM_PAYLOAD(h));
      for (auto* a = RTM_RTA(rtm); RTA_OK(a, rlen); a = RTA_NEXT(a, rlen)) {
        if (a->rta_type != RTA_OIF) continue;
        uint32_t oif = 0;
        std::memcpy(&oif, RTA_DATA(a), sizeof(oif));
        char name[IF_NAMESIZE] = {};
        if (if_indextoname(oif, name) == nullptr) {
          return {"", std::string(ErrnoStatus(errno, Cat("ifindex ", oif)).message())};
        }
        return {name, ""};
      }
      return {"", "the route names no output device"};
    }
  }
}

}  // namespace

std::vector<RouteDevice> RouteDevices(const std::vector<IpAddress>& addrs) {
  std::vector<RouteDevice> out(addrs.size());
  if (addrs.empty()) return out;
  const auto fail_all = [&out](const std::string& why) {
    for (RouteDevice& r : out) r = {"", why};
    return out;
  };
  UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd) return fail_all(std::string(ErrnoStatus(errno, "opening a netlink socket").message()));
  // The kernel answers at once; a caller is never held longer than this.
  const timeval timeout = {1, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  for (size_t i = 0; i < addrs.size(); ++i) {
    const IpAddress& a = addrs[i];
    rtmsg rtm{};
    rtm.rtm_family = static_cast<uint8_t>(a.is_v4() ? AF_INET : AF_INET6);
    rtm.rtm_dst_len = a.is_v4() ? 32 : 128;
    Request req(RTM_GETROUTE, 0, &rtm, sizeof(rtm));
    req.Addr(RTA_DST, a);
    // One answer per request: the route, or an error (no acknowledgement).
    req.hdr()->nlmsg_flags = NLM_F_REQUEST;
    req.hdr()->nlmsg_seq = static_cast<uint32_t>(i + 1);
    if (sendto(fd.get(), req.bytes().data(), req.bytes().size(), 0,
               reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
      out[i] = {"", std::string(ErrnoStatus(errno, "sending to netlink").message())};
      continue;
    }
    out[i] = ReadRouteAnswer(fd.get(), static_cast<uint32_t>(i + 1));
  }
  return out;
}

absl::StatusOr<std::array<uint8_t, 6>> DeviceMac(const std::string& ifname) {
  UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoStatus(errno, "opening a socket for SIOCGIFHWADDR");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd.get(), SIOCGIFHWADDR, &ifr) != 0) {
    return ErrnoStatus(errno, Cat("reading the hardware address of ", ifname));
  }
  std::array<uint8_t, 6> mac;
  std::memcpy(mac.data(), ifr.ifr_hwaddr.sa_data, mac.size());
  return mac;
}

absl::StatusOr<int> IfIndex(const std::string& ifname) {
  const unsigned idx = if_nametoindex(ifname.c_str());
  if (idx == 0) return ErrnoStatus(errno, Cat("device ", ifname));
  return static_cast<int>(idx);
}

absl::StatusOr<uint32_t> DeviceMtu(const std::string& ifname) {
  UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoStatus(errno, "opening a socket for SIOCGIFMTU");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  if (ioctl(fd.get(), SIOCGIFMTU, &ifr) != 0) {
    return ErrnoStatus(errno, Cat("reading the MTU of ", ifname));
  }
  return static_cast<uint32_t>(ifr.ifr_mtu);
}

}  // namespace ballast::probes::rtnl
