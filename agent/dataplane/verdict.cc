#include "agent/dataplane/verdict.h"

namespace ballast::dataplane {

// -Wswitch (in -Wall) makes a new enum value without a name a build error.
std::string_view VerdictName(ballast_verdict v) {
  switch (v) {
    case BALLAST_V_TX:
      return "tx";
    case BALLAST_V_REDIRECT:
      return "redirect";
    case BALLAST_V_ICMP_FWD_TX:
      return "icmp_fwd_tx";
    case BALLAST_V_ICMP_FWD_REDIRECT:
      return "icmp_fwd_redirect";
    case BALLAST_V_ICMP_TOO_BIG_SENT:
      return "icmp_too_big_sent";
    case BALLAST_V_PASS_NOT_IP:
      return "pass_not_ip";
    case BALLAST_V_PASS_NOT_VIP:
      return "pass_not_vip";
    case BALLAST_V_DROP_ICMP_NOT_ERR:
      return "drop_icmp_not_err";
    case BALLAST_V_DROP_ICMP_UNMATCHED:
      return "drop_icmp_unmatched";
    case BALLAST_V_PASS_FIB_NO_NEIGH:
      return "pass_fib_no_neigh";
    case BALLAST_V_PASS_TTL:
      return "pass_ttl";
    case BALLAST_V_BAD_ETH:
      return "bad_eth";
    case BALLAST_V_BAD_VLAN:
      return "bad_vlan";
    case BALLAST_V_BAD_IP4:
      return "bad_ip4";
    case BALLAST_V_BAD_IP6:
      return "bad_ip6";
    case BALLAST_V_IP6_EXT:
      return "ip6_ext";
    case BALLAST_V_DROP_FRAG4:
      return "drop_frag4";
    case BALLAST_V_DROP_FRAG6:
      return "drop_frag6";
    case BALLAST_V_DROP_BAD_L4:
      return "drop_bad_l4";
    case BALLAST_V_DROP_NO_BACKEND:
      return "drop_no_backend";
    case BALLAST_V_DROP_FENCED:
      return "drop_fenced";
    case BALLAST_V_DROP_FAMILY:
      return "drop_family";
    case BALLAST_V_DROP_TOO_BIG:
      return "drop_too_big";
    case BALLAST_V_DROP_FIB:
      return "drop_fib";
    case BALLAST_V_DROP_ENCAP:
      return "drop_encap";
    case BALLAST_V_DROP_NO_SETTINGS:
      return "drop_no_settings";
    case BALLAST_V_DROP_VIP_UNSERVED:
      return "drop_vip_unserved";
    case BALLAST_V_DROP_NO_NEIGH:
      return "drop_no_neigh";
    case BALLAST_V_BOUNCE_TX:
      return "bounce_tx";
    case BALLAST_V_BOUNCE_REDIRECT:
      return "bounce_redirect";
    case BALLAST_V_DROP_BOUNCE_BAD:
      return "drop_bounce_bad";
    case BALLAST_V_DROP_BOUNCE_STRANGER:
      return "drop_bounce_stranger";
    case BALLAST_V_DROP_BOUNCE_BUDGET:
      return "drop_bounce_budget";
    case BALLAST_V_GUARDED_TX:
      return "guarded_tx";
    case BALLAST_V_GUARDED_REDIRECT:
      return "guarded_redirect";
    case BALLAST_V_ESC_TX:
      return "esc_tx";
    case BALLAST_V_ESC_REDIRECT:
      return "esc_redirect";
    case BALLAST_V_DROP_BOUNCE_FORGED:
      return "drop_bounce_forged";
    case BALLAST_V_DROP_PROBATION_REFUTED:
      return "drop_probation_refuted";
    case BALLAST_V_MAX:
      break;
  }
  return "unknown";
}

std::string_view DecapVerdictName(ballast_decap_verdict v) {
  switch (v) {
    case BALLAST_DECAP_V_DECAPPED:
      return "decapped";
    case BALLAST_DECAP_V_PASS:
      return "pass";
    case BALLAST_DECAP_V_BAD_INNER:
      return "bad_inner";
    case BALLAST_DECAP_V_BAD_OUTER:
      return "bad_outer";
    case BALLAST_DECAP_V_BAD_SOURCE:
      return "bad_source";
    case BALLAST_DECAP_V_NOT_VIP:
      return "not_vip";
    case BALLAST_DECAP_V_BOUNCED:
      return "bounced";
    case BALLAST_DECAP_V_REFUSED:
      return "refused";
    case BALLAST_DECAP_V_DECAPPED_GUE:
      return "decapped_gue";
    case BALLAST_DECAP_V_RST_HELD:
      return "rst_held";
    case BALLAST_DECAP_V_TW_REFUSED:
      return "tw_refused";
    case BALLAST_DECAP_V_BOUNCED_EST:
      return "bounced_est";
    case BALLAST_DECAP_V_FRAG:
      return "frag";
    case BALLAST_DECAP_V_UNSERVED:
      return "unserved";
    case BALLAST_DECAP_V_MAX:
      break;
  }
  return "unknown";
}

std::string_view BackendStateName(ballast_backend_state s) {
  switch (s) {
    case BALLAST_BACKEND_UNUSED:
      return "unused";
    case BALLAST_BACKEND_ACTIVE:
      return "active";
    case BALLAST_BACKEND_DRAINING:
      return "draining";
    case BALLAST_BACKEND_EVICTED:
      return "evicted";
  }
  return "unknown";
}

std::string_view FlowStateName(ballast_flow_state s) {
  switch (s) {
    case BALLAST_FLOW_SYN_SENT:
      return "syn_sent";
    case BALLAST_FLOW_ESTABLISHED:
      return "established";
    case BALLAST_FLOW_CLOSING:
      return "closing";
    case BALLAST_FLOW_UDP:
      return "udp";
  }
  return "unknown";
}

}  // namespace ballast::dataplane
