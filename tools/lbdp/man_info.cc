#include "tools/lbdp/man_info.h"

namespace ballast::lbdp {

cli_doc::ManInfo LbdpManInfo() {
  cli_doc::ManInfo m;
  m.name = "lbdp";
  m.section = 8;
  m.version = BALLAST_VERSION;
  m.summary = "load, attach and inspect ballast's XDP programs and maps";
  m.description =
      "lbdp works on ballast's data plane directly, below lbagent. On a router it shows "
      "what the kernel holds (VIPs, backends, Maglev tables, flows, counters) from the maps "
      "pinned under --pin-dir; changing them by hand beside a running lbagent is undone by "
      "its reconciliation. On a backend it attaches the decap program, which strips the "
      "routers' encapsulation from packets addressed to this host's listed addresses, from "
      "the listed router sources, to the listed VIPs' protocols and ports (and ICMP errors "
      "about them), and counts everything else:\n"
      "\n"
      "  lbdp decap attach --dev eth0 --addr 198.18.12.2 --from 198.18.0.1/32 --vip "
      "198.18.0.10:80/tcp\n"
      "  lbdp decap stats --dev eth0\n"
      "  lbdp flows\n"
      "\n"
      "The ballast-backend unit runs the decap commands from /etc/ballast/backend.conf.";
  m.sections = {
      {"Exit status", "0 ok; non-zero with the reason on standard error."},
      {"See also", "lbagent(8), lbctl(1), ballast-backend(8), bpftool(8)"},
  };
  return m;
}

}  // namespace ballast::lbdp
