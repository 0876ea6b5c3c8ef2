#include "tools/lbctl/man_info.h"

namespace ballast::lbctl {

cli_doc::ManInfo LbctlManInfo() {
  cli_doc::ManInfo m;
  m.name = "lbctl";
  m.section = 1;
  m.version = BALLAST_VERSION;
  m.summary = "operate ballast's lbagent, the layer-4 load balancer's agent";
  m.description =
      "lbctl talks to lbagent's admin API (gRPC) on its unix socket, or over TCP with "
      "mutual TLS (--addr, --cacert, --cert, --key). It adds and removes VIPs and "
      "backends, sets weights, drains, applies declarative config files all or nothing, "
      "shows status, events and the audit log, and drills failovers in a cluster. Every "
      "change is validated and applied atomically by the agent, and audited.\n"
      "\n"
      "A backend is written ADDR[,weight=N]; ADDR:PORT is refused (backends take the "
      "VIP's port). A VIP is ADDR:PORT/PROTO, IPv6 in brackets:\n"
      "\n"
      "  lbctl vip add 198.18.0.10:80/tcp --backend 198.18.11.2 --backend 198.18.12.2,weight=3\n"
      "  lbctl backend drain 198.18.0.10:80/tcp 198.18.12.2 --deadline 60s\n"
      "  lbctl status 198.18.0.10:80/tcp -o json\n"
      "  lbctl config apply -f vips.conf --dry-run";
  m.sections = {
      {"Environment",
       "LBCTL_ADDR: lbagent's admin TCP listener (HOST:PORT), used when neither --socket "
       "nor --addr is given.\n"
       "\n"
       "LBCTL_SOCKET: lbagent's admin unix socket, used when neither --socket, --addr nor "
       "LBCTL_ADDR is given."},
      {"Exit status",
       "0 ok; 1 any other failure; 2 invalid input (bad flags or arguments, "
       "INVALID_ARGUMENT, OUT_OF_RANGE); 3 not found; 4 conflict (ALREADY_EXISTS, "
       "FAILED_PRECONDITION, ABORTED); 5 unreachable (UNAVAILABLE, DEADLINE_EXCEEDED, "
       "CANCELLED); 6 access denied (PERMISSION_DENIED, UNAUTHENTICATED)."},
      {"Files",
       "/run/ballast/lbagent.sock: the admin socket (mode 0660, group admin.socket_group "
       "of /etc/ballast/lbagent.conf).\n"
       "\n"
       "/usr/share/doc/ballast-router/lbctl.md: every command with examples."},
      {"See also", "lbagent(8), lbdp(8), bpftool(8)"},
  };
  return m;
}

}  // namespace ballast::lbctl
