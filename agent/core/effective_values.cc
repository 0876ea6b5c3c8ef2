// A config's effective values: what each field that may be left 0 means
// once its default applies (validate.h declares them).
#include <algorithm>

#include "agent/core/validate.h"
#include "agent/dataplane/types.h"

namespace ballast::core {

uint32_t EffectiveTableSize(const v1::Vip& vip) {
  return vip.table_size() == 0 ? kDefaultTableSize : vip.table_size();
}

EffectiveTimeouts TimeoutsOf(const v1::Global& g) {
  const v1::Timeouts& t = g.timeouts();
  const uint32_t tcp_idle_s = t.tcp_idle_s() ? t.tcp_idle_s() : 300;
  return EffectiveTimeouts{
      tcp_idle_s,
      t.udp_idle_s() ? t.udp_idle_s() : 30,
      t.linger_s() ? t.linger_s() : 10,
      t.syn_idle_s() ? t.syn_idle_s() : 5,
      t.syn_retry_ms() ? t.syn_retry_ms() : 200,
      t.syn_reuse_idle_s() ? t.syn_reuse_idle_s() : std::min<uint32_t>(60, tcp_idle_s),
      g.no_established_second_chance() ? 0u
      : t.adopted_bounce_ms()          ? t.adopted_bounce_ms()
                                       : dataplane::kDefaultAdoptedBounceMs};
}

uint32_t DrainTimeoutOf(const v1::Global& g) {
  return g.drain_timeout_s() ? g.drain_timeout_s() : 300;
}

IcmpTooBigLimit IcmpTooBigLimitOf(const v1::Global& g) {
  const uint32_t per_s =
      g.icmp_too_big_per_s() ? g.icmp_too_big_per_s() : dataplane::kDefaultIcmpTooBigPerS;
  return IcmpTooBigLimit{per_s, g.icmp_too_big_burst()
                                    ? g.icmp_too_big_burst()
                                    : std::min(dataplane::kDefaultIcmpTooBigBurst, per_s)};
}

uint16_t GuePortOf(const v1::Global& g) {
  // Validated to 0..65535 (0 = the default).
  return static_cast<uint16_t>(g.gue_port() ? g.gue_port() : BALLAST_GUE_PORT_DEFAULT);
}

uint32_t ProbeIntervalOf(const v1::ProbeSpec& p) {
  return p.interval_ms() ? p.interval_ms() : 1000;
}

uint32_t ProbeTimeoutOf(const v1::ProbeSpec& p) {
  if (p.timeout_ms() != 0) return p.timeout_ms();
  return std::min<uint32_t>(500, ProbeIntervalOf(p));
}

}  // namespace ballast::core
