#include "agent/dataplane/checks.h"

#include <netinet/in.h>

#include <utility>

#include "agent/base/strcat.h"
#include "agent/dataplane/verdict.h"

namespace ballast::dataplane {

using base::Cat;

namespace {

bool IsPrime(uint64_t n) {
  if (n < 2) return false;
  if (n % 2 == 0) return n == 2;
  for (uint64_t d = 3; d * d <= n; d += 2) {
    if (n % d == 0) return false;
  }
  return true;
}

}  // namespace

absl::Status CheckVipId(uint32_t vip_id) {
  if (vip_id == BALLAST_INVALID_ID || vip_id >= BALLAST_MAX_VIPS) {
    return absl::InvalidArgumentError(
        Cat("vip id ", vip_id, " is out of range 1..", BALLAST_MAX_VIPS - 1));
  }
  return absl::OkStatus();
}

absl::Status CheckBackendId(uint32_t id) {
  if (id == BALLAST_INVALID_ID || id >= BALLAST_MAX_BACKENDS) {
    return absl::InvalidArgumentError(
        Cat("backend id ", id, " is out of range 1..", BALLAST_MAX_BACKENDS - 1));
  }
  return absl::OkStatus();
}

absl::Status CheckSettings(const Settings& s) {
  if (!s.src4.is_v4()) {
    return absl::InvalidArgumentError(
        Cat("IPv4 source address ", s.src4.ToString(), " is not an IPv4 address"));
  }
  if (s.src6.family() != BALLAST_FAMILY_V6) {
    return absl::InvalidArgumentError(
        Cat("IPv6 source address ", s.src6.ToString(), " is not an IPv6 address"));
  }
  if (s.src4_prefix) {
    const IpPrefix& p = *s.src4_prefix;
    if (!p.address().is_v4() || p.length() < kMinSrc4PrefixLength ||
        p.length() > kMaxSrc4PrefixLength) {
      return absl::InvalidArgumentError(Cat("IPv4 source prefix ", p.ToString(),
                                            " is not an IPv4 prefix of length ",
                                            kMinSrc4PrefixLength, "..", kMaxSrc4PrefixLength));
    }
  }
  constexpr uint32_t kKnownPolicy = BALLAST_POLICY_DROP_MALFORMED | BALLAST_POLICY_ICMP_TOO_BIG;
  if ((s.policy & ~kKnownPolicy) != 0) {
    return absl::InvalidArgumentError(Cat("policy 0x", absl::Hex(s.policy),
                                          " has unknown bits (known: 0x", absl::Hex(kKnownPolicy),
                                          ")"));
  }
  const std::pair<const char*, uint64_t> timeouts[] = {{"tcp idle timeout", s.tcp_idle_ns},
                                                       {"udp idle timeout", s.udp_idle_ns},
                                                       {"linger", s.linger_ns},
                                                       {"syn idle timeout", s.syn_idle_ns},
                                                       {"fib ttl", s.fib_ttl_ns}};
  for (const auto& [name, ns] : timeouts) {
    if (ns == 0) return absl::InvalidArgumentError(Cat(name, " must be > 0"));
  }
  if (s.icmp_too_big_per_s > kMaxIcmpTooBigPerS) {
    return absl::InvalidArgumentError(
        Cat("ICMP too-big rate ", s.icmp_too_big_per_s, "/s is above ", kMaxIcmpTooBigPerS, "/s"));
  }
  if (s.icmp_too_big_per_s != 0 &&
      (s.icmp_too_big_burst == 0 || s.icmp_too_big_burst > s.icmp_too_big_per_s)) {
    return absl::InvalidArgumentError(Cat("ICMP too-big burst ", s.icmp_too_big_burst,
                                          " is out of range 1..", s.icmp_too_big_per_s,
                                          " (the rate per second)"));
  }
  if (s.syn_retry_ns >= s.syn_idle_ns) {
    return absl::InvalidArgumentError(Cat("SYN retry age ", s.syn_retry_ns,
                                          " ns is not below the syn idle timeout ", s.syn_idle_ns,
                                          " ns"));
  }
  return absl::OkStatus();
}

absl::Status CheckVipKey(const VipKey& key) {
  if (key.proto != IPPROTO_TCP && key.proto != IPPROTO_UDP) {
    return absl::InvalidArgumentError(
        Cat("VIP ", VipKeyString(key), ": protocol ", key.proto, " is not TCP (6) or UDP (17)"));
  }
  if (key.addr.is_unspecified()) {
    return absl::InvalidArgumentError(
        Cat("VIP ", VipKeyString(key), ": the address is unspecified"));
  }
  return absl::OkStatus();
}

absl::Status CheckBackend(uint32_t id, const IpAddress& addr, ballast_backend_state state,
                          uint64_t drain_deadline_ns) {
  if (absl::Status s = CheckBackendId(id); !s.ok()) return s;
  if (state != BALLAST_BACKEND_UNUSED && state != BALLAST_BACKEND_ACTIVE &&
      state != BALLAST_BACKEND_DRAINING && state != BALLAST_BACKEND_EVICTED) {
    return absl::InvalidArgumentError(
        Cat("backend ", id, ": state ", static_cast<int>(state), " is not valid"));
  }
  if (drain_deadline_ns != 0 && state != BALLAST_BACKEND_DRAINING) {
    return absl::InvalidArgumentError(Cat("backend ", addr.ToString(),
                                          ": a drain deadline needs state draining, not ",
                                          BackendStateName(state)));
  }
  if (state != BALLAST_BACKEND_UNUSED && addr.is_unspecified()) {
    return absl::InvalidArgumentError(
        Cat("backend ", id, ": address ", addr.ToString(), " is unspecified"));
  }
  return absl::OkStatus();
}

absl::Status CheckTable(uint32_t vip_id, std::span<const uint32_t> table) {
  if (absl::Status s = CheckVipId(vip_id); !s.ok()) return s;
  const size_t m = table.size();
  if (m == 0 || m > BALLAST_MAX_TABLE_SIZE || !IsPrime(m)) {
    return absl::InvalidArgumentError(Cat("vip id ", vip_id, ": Maglev table size ", m,
                                          " must be a prime in 2..", BALLAST_MAX_TABLE_SIZE));
  }
  for (size_t i = 0; i < m; ++i) {
    if (table[i] >= BALLAST_MAX_BACKENDS) {
      return absl::InvalidArgumentError(Cat("vip id ", vip_id, ": slot ", i, " holds backend id ",
                                            table[i], ", out of range 0..",
                                            BALLAST_MAX_BACKENDS - 1));
    }
  }
  return absl::OkStatus();
}

}  // namespace ballast::dataplane
