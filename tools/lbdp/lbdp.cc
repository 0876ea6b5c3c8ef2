// lbdp — command-line access to ballast's data plane.
//
// Every invocation is a new process: `attach` loads the program (adopting a
// running one), every other command works on the maps pinned under
// --pin-dir (default /sys/fs/bpf/ballast) without loading anything.
//
// Exit codes: 0 ok, 2 invalid input, 3 not found, 4 system/BPF error
// (cli.h). The decap commands are in decap_commands.cc.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/decap.h"
#include "tools/lbdp/cli.h"
#include "tools/lbdp/decap_commands.h"
#include "tools/lbdp/man_info.h"
#include "agent/base/strcat.h"
#include "agent/dataplane/verdict.h"
#include "agent/maglev/maglev.h"

namespace {

using ballast::IpAddress;
using namespace ballast::dataplane;
using ballast::base::Cat;

using namespace ballast::lbdp;  // NOLINT: exit codes, Fail, Global

absl::StatusOr<std::unique_ptr<Dataplane>> OpenPinned(const Global& g) {
  return Dataplane::OpenPinned(g.pin_dir);
}

// Relative milliseconds from now -> absolute CLOCK_MONOTONIC ns (0 stays 0).
uint64_t DeadlineFromNow(int64_t ms) {
  if (ms <= 0) return 0;
  return Dataplane::MonotonicNowNs() + static_cast<uint64_t>(ms) * 1'000'000ull;
}

std::string JsonStr(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// ---- attach / detach / teardown -------------------------------------------

struct AttachArgs {
  std::string dev, mode = "auto", src4, src6;
  uint32_t flows = 0;
  bool drop_malformed = false, no_icmp_too_big = false;
};

int CmdAttach(const Global& g, const AttachArgs& a) {
  auto mode = ParseAttachMode(a.mode);
  if (!mode.ok()) return Fail(mode.status());
  Settings settings;
  if (!a.src4.empty()) {
    auto ip = IpAddress::Parse(a.src4);
    if (!ip.ok() || !ip->is_v4()) return Invalid(Cat("--src4 ", a.src4, " is not an IPv4 address"));
    settings.src4 = *ip;
  }
  if (!a.src6.empty()) {
    auto ip = IpAddress::Parse(a.src6);
    if (!ip.ok() || ip->is_v4()) return Invalid(Cat("--src6 ", a.src6, " is not an IPv6 address"));
    settings.src6 = *ip;
  }
  settings.policy = (a.drop_malformed ? BALLAST_POLICY_DROP_MALFORMED : 0u) |
                    (a.no_icmp_too_big ? 0u : BALLAST_POLICY_ICMP_TOO_BIG);
  if (absl::Status s = EnterNetns(g.netns); !s.ok()) return Fail(s);

  Options o;
  o.pin_dir = g.pin_dir;
  if (a.flows != 0) {
    o.flow_capacity = a.flows;
  } else if (!g.pin_dir.empty()) {
    // Keep the size of an already pinned flow table (restart/re-run).
    UniqueFd pinned(bpf_obj_get(Cat(g.pin_dir, "/flows").c_str()));
    if (pinned) {
      if (auto info = GetMapInfo(pinned.get()); info.ok()) o.flow_capacity = info->max_entries;
    }
  }
  auto dp = Dataplane::Open(o);
  if (!dp.ok()) return Fail(dp.status());
  if (!(*dp)->adopted() || !a.src4.empty() || !a.src6.empty()) {
    // Keep the running settings' sources when restarting without them.
    if ((*dp)->adopted()) {
      if (auto cur = (*dp)->GetSettings(); cur.ok()) {
        if (a.src4.empty()) settings.src4 = cur->src4;
        if (a.src6.empty()) settings.src6 = cur->src6;
      }
    }
    if (absl::Status s = (*dp)->SetSettings(settings); !s.ok()) return Fail(s);
  }
  if (absl::Status s = (*dp)->Attach(a.dev, *mode); !s.ok()) return Fail(s);
  auto used = (*dp)->AttachedMode(a.dev);
  auto info = GetProgInfo((*dp)->prog_fd());
  printf("xdp_lb (prog id %u) runs on dev %s in %s mode%s; maps pinned under %s\n",
         info.ok() ? info->id : 0, a.dev.c_str(),
         used.ok() ? std::string(AttachModeName(*used)).c_str() : "?",
         (*dp)->adopted() ? " (adopted the running program)" : "", g.pin_dir.c_str());
  return kOk;
}

int CmdDetach(const Global& g, const std::string& dev) {
  if (absl::Status s = EnterNetns(g.netns); !s.ok()) return Fail(s);
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  if (absl::Status s = (*dp)->Detach(dev); !s.ok()) return Fail(s);
  printf("xdp_lb detached from dev %s (maps stay pinned; lbdp teardown removes them)\n",
         dev.c_str());
  return kOk;
}

int CmdTeardown(const Global& g) {
  if (absl::Status s = EnterNetns(g.netns); !s.ok()) return Fail(s);
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  if (absl::Status s = (*dp)->Teardown(); !s.ok()) return Fail(s);
  printf("xdp_lb detached from every device of this network namespace; %s removed\n",
         g.pin_dir.c_str());
  return kOk;
}

// ---- VIPs -----------------------------------------------------------------

int CmdVipAdd(const Global& g, const std::string& vip, uint32_t id, bool gue) {
  auto key = ParseVipKey(vip);
  if (!key.ok()) return Fail(key.status());
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  if (absl::Status s = (*dp)->UpsertVip(*key, id, {.gue = gue}); !s.ok()) return Fail(s);
  printf("vip %s id %u%s\n", VipKeyString(*key).c_str(), id, gue ? " (GUE)" : "");
  return kOk;
}

// "owned, deadline in 1.234 s (monotonic 5678)" / "owned, stopped: deadline
// passed 0.5 s ago (...)" / "not owned".
std::string OwnerText(const std::optional<uint64_t>& deadline, uint64_t now) {
  if (!deadline.has_value()) return "not owned";
  char buf[160];
  if (*deadline > now) {
    snprintf(buf, sizeof(buf), "owned, deadline in %.3f s (monotonic %" PRIu64 " ns)",
             static_cast<double>(*deadline - now) / 1e9, *deadline);
  } else {
    snprintf(buf, sizeof(buf),
             "owned, stopped: deadline passed %.3f s ago (monotonic %" PRIu64 " ns)",
             static_cast<double>(now - *deadline) / 1e9, *deadline);
  }
  return buf;
}

// "2s", "1500ms", "0.5s", "250us", "1m" -> ns. Non-negative.
absl::StatusOr<uint64_t> ParseDuration(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  const std::string number = text.substr(0, i);
  const std::string unit = text.substr(i);
  static const std::map<std::string, double> kUnits = {
      {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}};
  auto u = kUnits.find(unit);
  double value = 0;
  size_t used = 0;
  bool ok = !number.empty() && u != kUnits.end();
  if (ok) {
    try {
      value = std::stod(number, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  const double ns = ok ? value * u->second : 0;
  if (!ok || used != number.size() || ns > 1e18) {
    return absl::InvalidArgumentError(
        Cat("duration \"", text, "\" is not a number with a unit ns, us, ms, s or m (e.g. 2s)"));
  }
  return static_cast<uint64_t>(ns);
}

struct OwnerArgs {
  std::string in;
  uint64_t at_ns = 0;
  bool at_set = false;
  bool clear = false;
};

// Sets (--in / --at-ns), clears (--clear) or shows a VIP's owner deadline.
int CmdVipOwnerDeadline(const Global& g, const std::string& vip, const OwnerArgs& a) {
  auto key = ParseVipKey(vip);
  if (!key.ok()) return Fail(key.status());
  if (static_cast<int>(!a.in.empty()) + static_cast<int>(a.at_set) + static_cast<int>(a.clear) >
      1) {
    return Invalid("give at most one of --in, --at-ns and --clear");
  }
  std::optional<uint64_t> in_ns;
  if (!a.in.empty()) {
    auto d = ParseDuration(a.in);
    if (!d.ok()) return Fail(d.status());
    in_ns = *d;
  }
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  if (in_ns.has_value() || a.at_set || a.clear) {
    std::optional<uint64_t> deadline;
    if (in_ns.has_value()) deadline = Dataplane::MonotonicNowNs() + *in_ns;
    if (a.at_set) deadline = a.at_ns;
    if (absl::Status s = (*dp)->SetVipOwnerDeadline(*key, deadline); !s.ok()) return Fail(s);
  }
  auto owner = (*dp)->GetVipOwner(*key);
  if (!owner.ok()) return Fail(owner.status());
  printf("vip %s %s fenced %" PRIu64 "\n", VipKeyString(*key).c_str(),
         OwnerText(owner->deadline_ns, Dataplane::MonotonicNowNs()).c_str(), owner->fenced);
  return kOk;
}

int CmdVipDel(const Global& g, const std::string& vip) {
  auto key = ParseVipKey(vip);
  if (!key.ok()) return Fail(key.status());
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  if (absl::Status s = (*dp)->DeleteVip(*key); !s.ok()) return Fail(s);
  printf("vip %s deleted (with its table)\n", VipKeyString(*key).c_str());
  return kOk;
}

int CmdVipList(const Global& g) {
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  auto vips = (*dp)->Vips();
  if (!vips.ok()) return Fail(vips.status());
  const uint64_t now = Dataplane::MonotonicNowNs();
  for (const VipEntry& v : *vips) {
    std::string owner;
    if ((v.meta.flags & BALLAST_VIP_F_OWNED) != 0) {
      owner = " " + OwnerText(v.meta.owner_deadline_ns, now);
    }
    printf("vip %-32s id %u%s%s\n", VipKeyString(v.key).c_str(), v.meta.vip_id,
           (v.meta.flags & BALLAST_VIP_F_GUE) != 0 ? " gue" : "", owner.c_str());
  }
  return kOk;
}

// ---- backends -------------------------------------------------------------

int CmdBackendSet(const Global& g, uint32_t id, const std::string& addr, const std::string& state,
                  int64_t drain_ms) {
  auto ip = IpAddress::Parse(addr);
  if (!ip.ok()) return Fail(ip.status());
  ballast_backend_state st;
  if (state == "active") {
    st = BALLAST_BACKEND_ACTIVE;
  } else if (state == "draining") {
    st = BALLAST_BACKEND_DRAINING;
  } else if (state == "evicted") {
    st = BALLAST_BACKEND_EVICTED;
  } else {
    return Invalid(Cat("--state ", state, " is not one of active, draining, evicted"));
  }
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  if (absl::Status s = (*dp)->SetBackend(id, *ip, st, DeadlineFromNow(drain_ms)); !s.ok()) {
    return Fail(s);
  }
  printf("backend %u %s %s\n", id, ip->ToString().c_str(), state.c_str());
  return kOk;
}

int CmdBackendClear(const Global& g, uint32_t id) {
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  if (absl::Status s = (*dp)->ClearBackend(id); !s.ok()) return Fail(s);
  printf("backend %u cleared\n", id);
  return kOk;
}

int CmdBackendList(const Global& g) {
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  auto backends = (*dp)->Backends();
  if (!backends.ok()) return Fail(backends.status());
  const uint64_t now = Dataplane::MonotonicNowNs();
  for (const BackendEntry& b : *backends) {
    printf("backend %u %s %s", b.id, b.addr.ToString().c_str(),
           std::string(BackendStateName(b.state)).c_str());
    if (b.drain_deadline_ns != 0) {
      const double left = b.drain_deadline_ns > now ? (b.drain_deadline_ns - now) / 1e9 : 0.0;
      printf(" drain deadline in %.1f s", left);
    }
    printf("\n");
  }
  return kOk;
}

// ---- tables ---------------------------------------------------------------

int CmdTableSet(const Global& g, uint32_t vip_id, uint32_t size,
                const std::vector<std::string>& specs) {
  std::vector<ballast::maglev::Backend> backends;
  for (const std::string& spec : specs) {
    const size_t a = spec.find(':');
    const size_t b = spec.rfind(':');
    if (a == std::string::npos || a == b) {
      return Invalid(Cat("--backend ", spec, ": expected ID:KEY:WEIGHT, e.g. 1:198.18.1.10:100"));
    }
    try {
      size_t used = 0;
      const unsigned long id = std::stoul(spec.substr(0, a), &used);
      if (used != a) throw std::invalid_argument("id");
      const std::string weight_text = spec.substr(b + 1);
      const unsigned long weight = std::stoul(weight_text, &used);
      if (used != weight_text.size()) throw std::invalid_argument("weight");
      if (id > std::numeric_limits<uint32_t>::max() ||
          weight > std::numeric_limits<uint32_t>::max()) {
        throw std::out_of_range("id/weight");
      }
      backends.push_back({static_cast<uint32_t>(id), spec.substr(a + 1, b - a - 1),
                          static_cast<uint32_t>(weight)});
    } catch (const std::exception&) {
      return Invalid(
          Cat("--backend ", spec, ": ID and WEIGHT must be unsigned integers (ID:KEY:WEIGHT)"));
    }
  }
  auto table = ballast::maglev::BuildTable(backends, size);
  if (!table.ok()) return Fail(table.status());
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  if (absl::Status s = (*dp)->SetTable(vip_id, *table); !s.ok()) return Fail(s);
  std::map<uint32_t, uint32_t> slots;
  for (uint32_t id : *table) slots[id]++;
  printf("vip id %u: table of %u slots swapped in;", vip_id, size);
  for (const auto& be : backends) printf(" %u:%u", be.id, slots[be.id]);
  printf(" (id:slots)\n");
  return kOk;
}

int CmdTableShow(const Global& g, uint32_t vip_id) {
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  auto table = (*dp)->GetTable(vip_id);
  if (!table.ok()) return Fail(table.status());
  std::map<uint32_t, uint64_t> slots;
  for (uint32_t id : *table) slots[id]++;
  const double m = static_cast<double>(table->size());
  printf("size %zu\n", table->size());
  for (const auto& [id, n] : slots) {
    if (id == BALLAST_INVALID_ID) continue;
    printf("backend %u slots %" PRIu64 " share %.2f%%\n", id, n, 100.0 * n / m);
  }
  if (slots.count(BALLAST_INVALID_ID) != 0) {
    printf("unassigned %" PRIu64 "\n", slots[BALLAST_INVALID_ID]);
  }
  return kOk;
}

// ---- stats / flows ----------------------------------------------------------

int CmdStats(const Global& g, bool json) {
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  auto verdicts = (*dp)->Verdicts();
  if (!verdicts.ok()) return Fail(verdicts.status());
  auto vips = (*dp)->Vips();
  if (!vips.ok()) return Fail(vips.status());
  auto backends = (*dp)->Backends();
  if (!backends.ok()) return Fail(backends.status());
  auto flows = (*dp)->Flows(std::numeric_limits<size_t>::max());
  if (!flows.ok()) return Fail(flows.status());
  auto settings = (*dp)->GetSettings();
  if (!settings.ok()) return Fail(settings.status());
  auto limited = (*dp)->IcmpTooBigLimited();
  if (!limited.ok()) return Fail(limited.status());

  std::string out = json ? "{\"verdicts\":{" : "verdicts:\n";
  for (int v = 0; v < BALLAST_V_MAX; ++v) {
    const std::string name(VerdictName(static_cast<ballast_verdict>(v)));
    if (json) {
      out += Cat(v ? "," : "", JsonStr(name), ":", (*verdicts)[v]);
    } else if ((*verdicts)[v] != 0) {
      out += Cat("  ", name, " ", (*verdicts)[v], "\n");
    }
  }
  // Of drop_too_big: the ones refused for the rate limit.
  if (json) {
    out += Cat("},\"icmp_too_big\":{\"per_s\":", settings->icmp_too_big_per_s,
               ",\"burst\":", settings->icmp_too_big_burst, ",\"limited\":", *limited, "}");
  } else {
    out += Cat("icmp too-big: ", settings->icmp_too_big_per_s, "/s per CPU (0 = no limit), burst ",
               settings->icmp_too_big_burst, "; limited ", *limited, "\n");
  }
  out += json ? ",\"vips\":[" : "vips:\n";
  bool first = true;
  for (const VipEntry& v : *vips) {
    auto st = (*dp)->VipStats(v.meta.vip_id);
    if (!st.ok()) return Fail(st.status());
    if (json) {
      out += Cat(first ? "" : ",", "{\"vip\":", JsonStr(VipKeyString(v.key)),
                 ",\"id\":", v.meta.vip_id, ",\"packets\":", st->packets, ",\"bytes\":", st->bytes,
                 ",\"dropped\":", st->dropped, ",\"fenced\":", st->fenced, "}");
    } else {
      out += Cat("  ", VipKeyString(v.key), " id ", v.meta.vip_id, " packets ", st->packets,
                 " bytes ", st->bytes, " dropped ", st->dropped, " fenced ", st->fenced, "\n");
    }
    first = false;
  }
  out += json ? "],\"backends\":[" : "backends:\n";
  first = true;
  for (const BackendEntry& b : *backends) {
    auto st = (*dp)->BackendStats(b.id);
    if (!st.ok()) return Fail(st.status());
    if (json) {
      out +=
          Cat(first ? "" : ",", "{\"id\":", b.id, ",\"addr\":", JsonStr(b.addr.ToString()),
              ",\"state\":", JsonStr(std::string(BackendStateName(b.state))),
              ",\"new_flows\":", st->new_flows, ",\"packets\":", st->packets,
              ",\"bytes\":", st->bytes, ",\"syn_retransmits\":", st->syn_retransmits,
              ",\"client_rsts\":", st->client_rsts, ",\"handshake_ns_sum\":", st->handshake_ns_sum,
              ",\"handshake_count\":", st->handshake_count,
              ",\"first_response_ns_sum\":", st->first_response_ns_sum,
              ",\"first_response_count\":", st->first_response_count,
              ",\"resteered_away\":", st->resteered_away, "}");
    } else {
      const double hs = st->handshake_count ? st->handshake_ns_sum / 1e3 / st->handshake_count : 0;
      const double fr =
          st->first_response_count ? st->first_response_ns_sum / 1e3 / st->first_response_count : 0;
      char line[512];
      snprintf(line, sizeof(line),
               "  %u %s %s new_flows %" PRIu64 " packets %" PRIu64 " bytes %" PRIu64
               " syn_retx %" PRIu64 " client_rsts %" PRIu64
               " handshake_avg_us %.1f"
               " first_response_avg_us %.1f resteered_away %" PRIu64 "\n",
               b.id, b.addr.ToString().c_str(), std::string(BackendStateName(b.state)).c_str(),
               static_cast<uint64_t>(st->new_flows), static_cast<uint64_t>(st->packets),
               static_cast<uint64_t>(st->bytes), static_cast<uint64_t>(st->syn_retransmits),
               static_cast<uint64_t>(st->client_rsts), hs, fr,
               static_cast<uint64_t>(st->resteered_away));
      out += line;
    }
    first = false;
  }
  out += json ? Cat("],\"flows\":", flows->size(), "}\n") : Cat("flows: ", flows->size(), "\n");
  fputs(out.c_str(), stdout);
  return kOk;
}

int CmdHandshakes(const Global& g) {
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  auto hs = (*dp)->Handshakes();
  if (!hs.ok()) return Fail(hs.status());
  std::map<uint32_t, uint64_t> per_backend;
  for (const ballast_handshake& h : hs->live) ++per_backend[h.backend_id];
  for (const auto& [id, n] : per_backend) printf("backend %u: %" PRIu64 " under way\n", id, n);
  printf("%zu handshakes under way in %u slots; %" PRIu64
         " sets full (a new handshake there displaces the oldest)\n",
         hs->live.size(), (*dp)->handshake_sets() * BALLAST_HANDSHAKE_WAYS, hs->full_sets);
  return kOk;
}

int CmdFlows(const Global& g, size_t max) {
  auto dp = OpenPinned(g);
  if (!dp.ok()) return Fail(dp.status());
  auto flows = (*dp)->Flows(max);
  if (!flows.ok()) return Fail(flows.status());
  const uint64_t now = Dataplane::MonotonicNowNs();
  for (const auto& [k, f] : *flows) {
    auto src = IpAddress::FromAbi(k.src, k.family);
    auto dst = IpAddress::FromAbi(k.dst, k.family);
    if (!src.ok() || !dst.ok()) continue;
    const bool v6 = k.family == BALLAST_FAMILY_V6;
    const double idle = f.last_seen_ns < now ? (now - f.last_seen_ns) / 1e9 : 0.0;
    // A TCP flow whose handshake this router did not see lives in
    // adopted_flows (bpf/lib/maps.h).
    const bool adopted = k.proto == IPPROTO_TCP && (f.flags & BALLAST_FLOW_F_HANDSHAKE_SEEN) == 0;
    printf("%s%s%s:%u -> %s%s%s:%u %s %s%s backend %u idle %.1f s\n", v6 ? "[" : "",
           src->ToString().c_str(), v6 ? "]" : "", ntohs(k.sport), v6 ? "[" : "",
           dst->ToString().c_str(), v6 ? "]" : "", ntohs(k.dport),
           k.proto == IPPROTO_TCP ? "tcp" : (k.proto == IPPROTO_UDP ? "udp" : "?"),
           std::string(FlowStateName(static_cast<ballast_flow_state>(f.state))).c_str(),
           adopted ? " adopted" : "", f.backend_id, idle);
  }
  printf("%zu flows shown\n", flows->size());
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lbdp: program ballast's XDP data plane (maps pinned under --pin-dir)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("lbdp ") + BALLAST_VERSION);
  ballast::cli_doc::AddDocFlags(app, ballast::lbdp::LbdpManInfo());
  Global g;
  app.add_option("--pin-dir", g.pin_dir, "bpffs directory of the pinned maps and program")
      ->capture_default_str();
  app.add_option("--netns", g.netns,
                 "network namespace (name under /run/netns, or a path) for device operations");

  AttachArgs attach;
  auto* c_attach =
      app.add_subcommand("attach", "load (or adopt) xdp_lb, pin, set settings, attach");
  c_attach->add_option("--dev", attach.dev, "network device")->required();
  c_attach->add_option("--mode", attach.mode, "native | generic | auto")->capture_default_str();
  c_attach->add_option("--src4", attach.src4, "outer IPv4 source address for encapsulation");
  c_attach->add_option("--src6", attach.src6, "outer IPv6 source address for encapsulation");
  c_attach->add_option("--flows", attach.flows, "connection table capacity (first load only)");
  c_attach->add_flag("--drop-malformed", attach.drop_malformed,
                     "drop malformed headers instead of passing them to the kernel");
  c_attach->add_flag("--no-icmp-too-big", attach.no_icmp_too_big,
                     "drop oversize packets instead of answering ICMP too-big");

  std::string dev;
  auto* c_detach = app.add_subcommand("detach", "detach xdp_lb from a device (maps stay)");
  c_detach->add_option("--dev", dev, "network device")->required();
  auto* c_teardown =
      app.add_subcommand("teardown", "detach xdp_lb everywhere in this netns and remove the pins");

  auto* c_vip = app.add_subcommand("vip", "VIPs");
  c_vip->require_subcommand(1);
  std::string vip;
  uint32_t vip_id = 0;
  auto* c_vip_add = c_vip->add_subcommand(
      "add", "add or update a VIP (an existing VIP keeps its owner deadline)");
  c_vip_add
      ->add_option("vip", vip, "ADDR:PORT/PROTO, e.g. 198.18.0.10:80/tcp, [2001:db8::10]:443/tcp")
      ->required();
  c_vip_add->add_option("--id", vip_id, "vip id 1..1023")->required();
  bool vip_gue = false;
  c_vip_add->add_flag("--gue", vip_gue,
                      "encapsulate as GUE (IP in UDP) instead of IP-in-IP; without it an "
                      "existing GUE VIP goes back to IP-in-IP");
  auto* c_vip_del = c_vip->add_subcommand("del", "delete a VIP and its table");
  c_vip_del->add_option("vip", vip, "ADDR:PORT/PROTO")->required();
  auto* c_vip_list = c_vip->add_subcommand("list", "list VIPs");
  OwnerArgs owner;
  auto* c_vip_owner = c_vip->add_subcommand(
      "owner-deadline",
      "owned mode (active/standby): set, clear or show the instant the data plane stops "
      "forwarding the VIP (no option: show)");
  c_vip_owner->add_option("vip", vip, "ADDR:PORT/PROTO")->required();
  c_vip_owner->add_option("--in", owner.in, "owned; deadline this long from now (2s, 500ms, 1m)");
  c_vip_owner->add_option(
      "--at-ns", owner.at_ns,
      "owned; deadline at this CLOCK_MONOTONIC instant (0 or past = stopped now)");
  c_vip_owner->add_flag("--clear", owner.clear, "not owned: forward without a fence");

  auto* c_be = app.add_subcommand("backend", "backends");
  c_be->require_subcommand(1);
  uint32_t be_id = 0;
  std::string be_addr, be_state = "active";
  int64_t drain_ms = 0;
  auto* c_be_set = c_be->add_subcommand("set", "set a backend slot");
  c_be_set->add_option("--id", be_id, "backend id 1..16383")->required();
  c_be_set->add_option("--addr", be_addr, "encapsulation destination")->required();
  c_be_set->add_option("--state", be_state, "active | draining | evicted")->capture_default_str();
  c_be_set->add_option("--drain-deadline-ms", drain_ms,
                       "draining: existing flows move away this many ms from now");
  auto* c_be_clear = c_be->add_subcommand("clear", "free a backend slot");
  c_be_clear->add_option("--id", be_id, "backend id")->required();
  auto* c_be_list = c_be->add_subcommand("list", "list backends");

  auto* c_table = app.add_subcommand("table", "Maglev tables");
  c_table->require_subcommand(1);
  uint32_t table_size = BALLAST_DEFAULT_TABLE_SIZE;
  std::vector<std::string> specs;
  auto* c_table_set =
      c_table->add_subcommand("set", "build a weighted Maglev table and swap it in");
  c_table_set->add_option("--vip-id", vip_id, "vip id")->required();
  c_table_set->add_option("--size", table_size, "table size M (prime)")->capture_default_str();
  c_table_set->add_option("--backend", specs, "ID:KEY:WEIGHT (KEY: stable name, e.g. the address)")
      ->required();
  auto* c_table_show = c_table->add_subcommand("show", "slots per backend");
  c_table_show->add_option("--vip-id", vip_id, "vip id")->required();

  bool json = false;
  auto* c_stats = app.add_subcommand("stats", "verdict, VIP and backend counters, flow count");
  c_stats->add_flag("--json", json, "JSON output");
  size_t max_flows = 100;
  auto* c_handshakes = app.add_subcommand(
      "handshakes", "TCP handshakes under way (SYN seen, completing ACK not yet), per backend");
  auto* c_flows = app.add_subcommand("flows", "connection table entries");
  c_flows->add_option("--max", max_flows, "at most this many")->capture_default_str();

  auto* c_decap = app.add_subcommand("decap", "backend-side decap program");
  c_decap->require_subcommand(1);
  DecapAttachArgs decap;
  auto* c_decap_check = c_decap->add_subcommand(
      "check", "check decap lists as attach would take them, without loading anything");
  c_decap_check->add_option("--addr", decap.addrs, "local address to decapsulate for")->required();
  c_decap_check->add_option("--from", decap.sources, "router outer source, or 'any'")->required();
  c_decap_check
      ->add_option("--vip", decap.vips,
                   "VIP served here: ADDR:PORT/PROTO (port 0: every port), an address alone "
                   "(every port and protocol), or 'any'")
      ->required();
  bool print_vip_addresses = false;
  c_decap_check->add_flag("--print-vip-addresses", print_vip_addresses,
                          "print only the VIPs' addresses, one a line (to put them on lo)");
  auto* c_decap_attach = c_decap->add_subcommand(
      "attach", "load xdp_decap and attach it (and tc_decap_rst to the device's tc egress)");
  c_decap_attach->add_option("--dev", dev, "network device")->required();
  c_decap_attach->add_option("--addr", decap.addrs, "local address to decapsulate for")->required();
  c_decap_attach
      ->add_option("--from", decap.sources,
                   "router outer source allowed to send (address or prefix, repeatable), or "
                   "'any' (an open tunnel)")
      ->required();
  c_decap_attach
      ->add_option("--vip", decap.vips,
                   "VIP served here (repeatable): ADDR:PORT/PROTO (port 0: every port of the "
                   "protocol), an address alone (every port and protocol, as before ports), or "
                   "'any'")
      ->required();
  c_decap_attach->add_option("--mode", decap.mode, "native | generic | auto")
      ->capture_default_str();
  c_decap_attach->add_flag("--no-bounce", decap.no_bounce,
                           "pass SYNs no socket here would take up the stack (the kernel "
                           "answers RST) instead of bouncing them to their router");
  c_decap_attach
      ->add_option("--gue-port", decap.gue_port,
                   "also accept GUE (a VIP with mode: GUE) on this UDP port, e.g. 6080")
      ->check(CLI::Range(1, 65535));
  auto* c_decap_detach = c_decap->add_subcommand("detach", "detach xdp_decap and tc_decap_rst");
  c_decap_detach->add_option("--dev", dev, "network device")->required();
  auto* c_decap_stats = c_decap->add_subcommand("stats", "counters of the attached xdp_decap");
  c_decap_stats->add_option("--dev", dev, "network device")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version, --generate-*
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kInvalid;
  }

  if (*c_attach) return CmdAttach(g, attach);
  if (*c_detach) return CmdDetach(g, dev);
  if (*c_teardown) return CmdTeardown(g);
  if (*c_vip_add) return CmdVipAdd(g, vip, vip_id, vip_gue);
  if (*c_vip_owner) {
    owner.at_set = c_vip_owner->count("--at-ns") > 0;
    return CmdVipOwnerDeadline(g, vip, owner);
  }
  if (*c_vip_del) return CmdVipDel(g, vip);
  if (*c_vip_list) return CmdVipList(g);
  if (*c_be_set) return CmdBackendSet(g, be_id, be_addr, be_state, drain_ms);
  if (*c_be_clear) return CmdBackendClear(g, be_id);
  if (*c_be_list) return CmdBackendList(g);
  if (*c_table_set) return CmdTableSet(g, vip_id, table_size, specs);
  if (*c_table_show) return CmdTableShow(g, vip_id);
  if (*c_stats) return CmdStats(g, json);
  if (*c_flows) return CmdFlows(g, max_flows);
  if (*c_handshakes) return CmdHandshakes(g);
  if (*c_decap_check) return CmdDecapCheck(decap, print_vip_addresses);
  if (*c_decap_attach) return CmdDecapAttach(g, dev, decap);
  if (*c_decap_detach) return CmdDecapDetach(g, dev);
  if (*c_decap_stats) return CmdDecapStats(g, dev);
  return Invalid("no command given (see --help)");
}
