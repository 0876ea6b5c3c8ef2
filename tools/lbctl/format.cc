#include "tools/lbctl/format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/lbctl/address.h"

namespace ballast::lbctl {
namespace {

std::string FormatTimeMs(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

std::string Ago(int64_t unix_ms, absl::Time now) {
  if (unix_ms <= 0) return "never";
  absl::Duration d = now - absl::FromUnixMillis(unix_ms);
  if (d < absl::ZeroDuration()) return FormatTimeMs(unix_ms);
  if (d < absl::Seconds(1)) return "just now";
  return absl::StrCat(absl::FormatDuration(absl::Trunc(d, absl::Seconds(1))), " ago");
}

std::string BackendState(const v1::BackendStatus& b, absl::Time now) {
  if (b.state() == "draining" && b.drain_deadline_unix_ms() > 0) {
    absl::Duration left = absl::FromUnixMillis(b.drain_deadline_unix_ms()) - now;
    if (left < absl::ZeroDuration()) left = absl::ZeroDuration();
    return absl::StrCat("draining(", absl::FormatDuration(absl::Trunc(left, absl::Seconds(1))),
                        ")");
  }
  return b.state().empty() ? "-" : b.state();
}

}  // namespace

Table::Table(std::vector<std::string> header, std::string indent)
    : indent_(std::move(indent)), header_(std::move(header)) {}

void Table::AddRow(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

std::string Table::Render() const {
  std::vector<size_t> width(header_.size());
  for (size_t i = 0; i < header_.size(); ++i) width[i] = header_[i].size();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l = indent_;
    for (size_t i = 0; i < cells.size(); ++i) {
      const bool right = i < numeric_.size() && numeric_[i];
      const std::string pad(width[i] - cells[i].size(), ' ');
      if (i > 0) l.append("  ");
      if (right) l.append(pad);
      l.append(cells[i]);
      if (!right && i + 1 < cells.size()) l.append(pad);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out.append(l).push_back('\n');
  };
  line(header_);
  for (const auto& row : rows_) line(row);
  return out;
}

std::string Compact(uint64_t n) {
  if (n < 100000) return absl::StrCat(n);
  if (n < 1000000) return absl::StrFormat("%.1fk", n / 1e3);
  if (n < 1000000000) return absl::StrFormat("%.1fM", n / 1e6);
  if (n < 1000000000000ULL) return absl::StrFormat("%.1fG", n / 1e9);
  return absl::StrFormat("%.1fT", n / 1e12);
}

std::string FormatStatus(const v1::StatusResponse& st, absl::Time now) {
  const std::string attached =
      st.interface().empty() ? std::string("not attached to an interface")
                             : absl::StrCat("interface ", st.interface(), " (",
                                            st.attach_mode().empty() ? "?" : st.attach_mode(), ")");
  std::string out =
      absl::StrCat("lbagent ", st.agent_version().empty() ? "?" : st.agent_version(), "  ",
                   attached, "  config generation ", st.config_generation(), "  last map update ",
                   Ago(st.last_map_update_unix_ms(), now), "\n");
  if (st.coordination().mode() == "cluster") {
    const v1::Coordination& c = st.coordination();
    if (c.up()) {
      absl::StrAppend(&out, "COORDINATION: cluster, node ", c.node(),
                      c.is_leader() ? " (leader)" : "", ", leader ",
                      c.leader().empty() ? "none" : c.leader(), ", ", c.live_nodes(),
                      " live nodes, state revision ", c.state_revision(), ", config ",
                      c.config_hash().substr(0, 12), ", ", c.differences(), " differences, ",
                      c.split_views(), " split views\n");
    } else {
      absl::StrAppend(&out, "COORDINATION: etcd unreachable since ",
                      FormatTimeMs(c.since_unix_ms()), " (", Ago(c.since_unix_ms(), now),
                      "), frozen: forwarding on state revision ", c.state_revision(),
                      ", no changes\n");
    }
    for (const v1::VipOwnerStatus& o : c.owners()) {
      absl::StrAppend(&out, "OWNERSHIP: vip ", o.vip(),
                      " active/standby: ", o.owner() ? "owner (forwarding)" : "standby (stopped)",
                      ", holder ", o.holder().empty() ? "none" : o.holder(), ", deadline ",
                      o.deadline_in_ms() > 0 ? absl::StrCat("in ", o.deadline_in_ms(), " ms")
                                             : std::string("passed"),
                      ", fenced ", Compact(o.fenced()), "\n");
    }
    for (const std::string& a : c.alerts()) absl::StrAppend(&out, "ALERT: ", a, "\n");
  }
  if (st.announcement().enabled()) {
    const v1::Announcement& a = st.announcement();
    absl::StrAppend(&out, "BGP: BIRD ", a.bird_socket(), " ",
                    a.bird_reachable() ? absl::StrCat("reachable (", a.bird_version(), ")")
                                       : std::string("UNREACHABLE"),
                    ", data plane ",
                    a.dataplane_healthy() ? std::string("healthy")
                                          : absl::StrCat("UNHEALTHY: ", a.dataplane_problem()),
                    ", errors ", a.bird_errors(), "\n");
    if (!a.bird_error().empty()) absl::StrAppend(&out, "BGP: error: ", a.bird_error(), "\n");
    if (!a.hold().empty()) absl::StrAppend(&out, "BGP: every VIP withdrawn: ", a.hold(), "\n");
    for (const std::string& s : a.sessions()) absl::StrAppend(&out, "BGP: session ", s, "\n");
    for (const v1::VipAnnouncement& v : a.vips()) {
      absl::StrAppend(&out, "ANNOUNCE: ", v.prefix(), " ", v.announce() ? "announced" : "withdrawn",
                      " (", v.reason(), "), BIRD ", v.bird_state(),
                      v.since_unix_ms() > 0 ? absl::StrCat(", since ", Ago(v.since_unix_ms(), now))
                                            : std::string(),
                      v.error().empty() ? std::string() : absl::StrCat(", error: ", v.error()),
                      "\n");
    }
  }
  std::vector<std::pair<std::string, uint64_t>> verdicts(st.verdicts().begin(),
                                                         st.verdicts().end());
  std::sort(verdicts.begin(), verdicts.end());
  std::vector<std::string> nonzero;
  for (const auto& [name, count] : verdicts) {
    if (count > 0) nonzero.push_back(absl::StrCat(name, "=", Compact(count)));
  }
  if (!nonzero.empty()) absl::StrAppend(&out, "verdicts ", absl::StrJoin(nonzero, " "), "\n");
  if (st.has_established_second_chance()) {
    const v1::EstablishedSecondChance& e = st.established_second_chance();
    if (e.window_ms() == 0) {
      absl::StrAppend(&out, "established second chance: OFF (global.no_established_second_chance)",
                      e.adopted() > 0 ? absl::StrCat(", adopted ", Compact(e.adopted())) : "",
                      "\n");
    } else {
      absl::StrAppend(&out, "established second chance: window ", e.window_ms(), " ms, adopted ",
                      Compact(e.adopted()), " (", Compact(e.adopted_changed()),
                      " on changed slots), moved to a previous backend ", Compact(e.moved()),
                      ", not saved ", Compact(e.returned()), " (no backend in the history held it)",
                      e.skipped_unusable() > 0
                          ? absl::StrCat(", unusable skipped ", Compact(e.skipped_unusable()))
                          : "",
                      e.stranger() + e.budget() > 0
                          ? absl::StrCat(", bounces dropped ", Compact(e.stranger() + e.budget()))
                          : "",
                      "\n");
    }
  }
  if (st.bounce_interfaces_size() > 0) {
    absl::StrAppend(&out,
                    "bounce interfaces (lb program attached where backends' bounces arrive): ",
                    absl::StrJoin(st.bounce_interfaces(), " "), "\n");
  }
  if (st.audit_append_failures() > 0) {
    absl::StrAppend(
        &out, "AUDIT: ", st.audit_append_failures(),
        " change(s) applied without their audit record (latest: ", st.last_audit_error(), ")\n");
  }
  if (st.flow_tables_size() > 0) {
    std::vector<std::string> tables;
    for (const v1::FlowTable& t : st.flow_tables()) {
      const double pct = t.capacity() == 0 ? 0.0
                                           : 100.0 * static_cast<double>(t.entries()) /
                                                 static_cast<double>(t.capacity());
      tables.push_back(absl::StrFormat("%s %s/%s (%.0f%%)", t.map(), Compact(t.entries()),
                                       Compact(t.capacity()), pct));
    }
    absl::StrAppend(&out, "flow tables ", absl::StrJoin(tables, ", "), "\n");
  }
  if (st.flows_partial()) {
    absl::StrAppend(&out, "FLOWS: lower bounds, counted from the first ", Compact(st.flows_read()),
                    " entries of the connection table (the agent reads no more per status)\n");
  }
  if (st.vips_size() == 0) {
    absl::StrAppend(&out, "\nno VIPs configured (lbctl vip add ADDR:PORT/PROTO ...)\n");
    return out;
  }
  for (const v1::VipStatus& vip : st.vips()) {
    absl::StrAppend(&out, "\nVIP ", FormatVipKey(vip.key()));
    if (!vip.name().empty()) absl::StrAppend(&out, " \"", vip.name(), "\"");
    absl::StrAppend(&out, "  id ", vip.vip_id(), "  table ", vip.table_size(),
                    vip.mode() == v1::GUE ? "  encap gue" : "",
                    vip.history_versions() > 0
                        ? absl::StrCat("  history ", vip.history_versions())
                        : std::string(),
                    "  pkts ", Compact(vip.packets()),
                    "  bytes ", Compact(vip.bytes()), "  dropped ", Compact(vip.dropped()),
                    "  backends ", vip.backends_size(), "\n");
    for (int i = 0; i < vip.quic_size(); ++i) {
      const v1::QuicConfigStatus& q = vip.quic(i);
      absl::StrAppend(&out, i == 0 ? "  QUIC-LB config " : "  QUIC-LB previous config ",
                      q.config_id(), ": server ID ", q.server_id_len(), " + nonce ", q.nonce_len(),
                      " octets, ", q.encrypted() ? "encrypted" : "plaintext", ", since ",
                      Ago(q.started_unix_ms(), now),
                      i == 0 ? "" : " (still routed: lbctl vip quic-retire ends it)", "\n");
    }
    if (vip.frozen()) {
      absl::StrAppend(&out,
                      "  FROZEN by the fleet guard (fleet-wide degradation): weights held since ",
                      Ago(vip.frozen_since_unix_ms(), now), "\n");
    }
    if (vip.backends_size() == 0) {
      absl::StrAppend(&out, "  (no backends)\n");
      continue;
    }
    // QUIC VIPs: each backend's server ID after its address.
    const bool quic = vip.quic_size() > 0;
    std::vector<std::string> header = {"BACKEND", "STATE", "NOMINAL", "EFFECTIVE", "SLOTS",
                                       "FLOWS",   "NEW",   "PKTS",    "SYN-RTX",   "RSTS",
                                       "REFUSED", "HS-MS", "SCORE",   "HEALTH",    "WHY"};
    std::vector<bool> numeric = {false, false, true, true, true, true,  true, true,
                                 true,  true,  true, true, true, false, false};
    if (quic) {
      header.insert(header.begin() + 1, "SERVER-ID");
      numeric.insert(numeric.begin() + 1, false);
    }
    Table t(header, "  ");
    t.SetNumeric(numeric);
    std::vector<std::string> lost;  // second-chance bounces that cannot be taken
    for (const v1::BackendStatus& b : vip.backends()) {
      const v1::BackendCounters& c = b.counters();
      std::string slots =
          vip.table_size() > 0
              ? absl::StrFormat("%.1f%%",
                                100.0 * static_cast<double>(b.table_slots()) / vip.table_size())
              : "-";
      std::string hs =
          c.handshake_count() > 0
              ? absl::StrFormat("%.2f", static_cast<double>(c.handshake_ns_sum()) /
                                            static_cast<double>(c.handshake_count()) / 1e6)
              : "-";
      std::string health = b.health().empty() ? "-" : b.health();
      if (b.health() == "ramping") absl::StrAppend(&health, " ", b.ramp_percent(), "%");
      std::vector<std::string> why(b.conditions().begin(), b.conditions().end());
      if (b.has_bounce_path() && !b.bounce_path().ok()) {
        why.push_back("bounces_unreachable");
        lost.push_back(
            absl::StrCat("  BOUNCES LOST: ", b.address(), ": ", b.bounce_path().problem(), "\n"));
      }
      std::vector<std::string> row = {b.address(),
                                      BackendState(b, now),
                                      absl::StrCat(b.nominal_weight()),
                                      absl::StrCat(b.effective_weight()),
                                      slots,
                                      Compact(b.flows()),
                                      Compact(c.new_flows()),
                                      Compact(c.packets()),
                                      Compact(c.syn_retransmits()),
                                      Compact(c.client_rsts()),
                                      Compact(c.refused_syns()),
                                      hs,
                                      absl::StrCat(b.score()),
                                      health,
                                      why.empty() ? "-" : absl::StrJoin(why, ",")};
      if (quic) row.insert(row.begin() + 1, b.quic_server_id().empty() ? "-" : b.quic_server_id());
      t.AddRow(std::move(row));
    }
    out.append(t.Render());
    for (const std::string& l : lost) out.append(l);
  }
  return out;
}

std::string FormatFlows(const v1::VipKey& vip, const v1::ListFlowsResponse& resp) {
  Table t({"PRO", "STATE", "EXPIRES", "IDLE", "CLIENT", "VIP PORT", "BACKEND", "TABLE"});
  t.SetNumeric({false, false, true, true, false, true, false, false});
  const std::string pro = vip.protocol() == v1::UDP ? "udp" : "tcp";
  for (const v1::Flow& f : resp.flows()) {
    const bool v6 = f.client().find(':') != std::string::npos;
    t.AddRow({pro, f.state(), absl::StrFormat("%.1fs", f.expires_in_ms() / 1000.0),
              absl::StrFormat("%.1fs", f.idle_ms() / 1000.0),
              absl::StrCat(v6 ? "[" : "", f.client(), v6 ? "]:" : ":", f.client_port()),
              absl::StrCat(f.vip_port()), f.backend(), f.table()});
  }
  std::string out = resp.flows().empty() ? "" : t.Render();
  absl::StrAppend(
      &out, resp.flows_size(), " of ", resp.matched(), " live flows of ", FormatVipKey(vip),
      " shown (", resp.scanned(), " table entries read",
      resp.partial() ? "; the read stopped at the scan limit, counts are lower bounds" : "", ")\n");
  return out;
}

std::string FormatVips(const v1::ListVipsResponse& resp) {
  if (resp.vips_size() == 0) return "no VIPs configured\n";
  Table t({"VIP", "NAME", "TABLE", "MODE", "BACKENDS"});
  t.SetNumeric({false, false, true, false, false});
  for (const v1::Vip& vip : resp.vips()) {
    std::vector<std::string> backends;
    for (const v1::Backend& b : vip.backends()) {
      // As --backend takes it.
      backends.push_back(absl::StrCat(b.address(), ",weight=", b.weight()));
    }
    t.AddRow({FormatVipKey(vip.key()), vip.name().empty() ? "-" : vip.name(),
              vip.table_size() == 0 ? "default" : absl::StrCat(vip.table_size()),
              vip.mode() == v1::GUE ? "gue" : "encap",  // as --mode takes it
              backends.empty() ? "-" : absl::StrJoin(backends, " ")});
  }
  return t.Render();
}

std::string FormatAudit(const v1::QueryAuditResponse& resp) {
  if (resp.records_size() == 0) return "no audit records in this period\n";
  Table t({"TIME", "ACTOR", "ACTION", "VIP", "BACKEND", "RESULT"});
  for (const v1::AuditRecord& r : resp.records()) {
    t.AddRow({FormatTimeMs(r.unix_ms()), r.actor(), r.action(), r.vip().empty() ? "-" : r.vip(),
              r.backend().empty() ? "-" : r.backend(), r.result().empty() ? "-" : r.result()});
  }
  return t.Render();
}

std::string FormatDigest(const v1::QueryAuditResponse& resp, absl::Duration period,
                         absl::Time now) {
  std::string out = absl::StrCat("digest of the last ", absl::FormatDuration(period), " (since ",
                                 FormatTimeMs(absl::ToUnixMillis(now - period)),
                                 "): ", resp.records_size(), " audit records\n");
  std::map<std::string, uint64_t> automated, operator_actions, failed;
  std::map<std::string, uint64_t> per_backend;
  std::vector<const v1::AuditRecord*> alerts;
  for (const v1::AuditRecord& r : resp.records()) {
    const bool ok = r.result().empty() || r.result() == "ok";
    if (!ok) ++failed[r.action()];
    if (r.actor() == "automation") {
      ++automated[r.action()];
      if (!r.backend().empty()) ++per_backend[absl::StrCat(r.vip(), " ", r.backend())];
      if (r.action() == "pin" || r.action() == "freeze" || r.action() == "disagreement") {
        alerts.push_back(&r);
      }
    } else {
      ++operator_actions[r.action()];
    }
  }
  const auto counts = [&out](const char* title, const std::map<std::string, uint64_t>& m) {
    absl::StrAppend(&out, "\n", title, "\n");
    if (m.empty()) {
      absl::StrAppend(&out, "  none\n");
      return;
    }
    Table t({"ACTION", "COUNT"}, "  ");
    t.SetNumeric({false, true});
    for (const auto& [k, n] : m) t.AddRow({k, absl::StrCat(n)});
    out.append(t.Render());
  };
  counts("automated actions by kind", automated);
  counts("operator actions by kind", operator_actions);
  std::vector<std::pair<uint64_t, std::string>> top;
  for (const auto& [k, n] : per_backend) top.emplace_back(n, k);
  std::sort(top.begin(), top.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  absl::StrAppend(&out, "\nbackends acted on most (automated actions)\n");
  if (top.empty()) absl::StrAppend(&out, "  none\n");
  if (!top.empty()) {
    Table t({"VIP BACKEND", "ACTIONS"}, "  ");
    t.SetNumeric({false, true});
    for (size_t i = 0; i < top.size() && i < 10; ++i) {
      t.AddRow({top[i].second, absl::StrCat(top[i].first)});
    }
    out.append(t.Render());
  }
  const auto count_of = [&automated](const char* k) {
    auto it = automated.find(k);
    return it == automated.end() ? uint64_t{0} : it->second;
  };
  absl::StrAppend(&out, "\nalerts: ", count_of("pin"), " pins, ", count_of("freeze"),
                  " freezes (fleet-wide degradation), ", count_of("disagreement"),
                  " disagreement alerts\n");
  for (const v1::AuditRecord* r : alerts) {
    absl::StrAppend(&out, "  ", FormatTimeMs(r->unix_ms()), "  ", r->action(), "  ",
                    r->vip().empty() ? "-" : r->vip(), r->backend().empty() ? "" : " ",
                    r->backend(), "\n");
  }
  if (!failed.empty()) {
    counts("rejected or failed requests by action", failed);
  }
  return out;
}

std::string FormatEvent(const v1::Event& e) {
  std::string out = absl::StrCat(FormatTimeMs(e.unix_ms()), "  ", e.kind());
  if (!e.vip().empty()) absl::StrAppend(&out, "  vip=", e.vip());
  if (!e.backend().empty()) absl::StrAppend(&out, "  backend=", e.backend());
  if (!e.message().empty()) absl::StrAppend(&out, "  ", e.message());
  if (e.generation() > 0) absl::StrAppend(&out, "  (generation ", e.generation(), ")");
  out.push_back('\n');
  return out;
}

std::string FormatApply(const v1::ApplyConfigResponse& resp, bool dry_run) {
  std::string out;
  for (const std::string& line : resp.diff()) absl::StrAppend(&out, line, "\n");
  const int n = resp.diff_size();
  if (n == 0) {
    absl::StrAppend(&out, "no changes\n");
  } else if (dry_run) {
    absl::StrAppend(&out, "dry run: ", n, n == 1 ? " change" : " changes", ", nothing applied\n");
  } else {
    absl::StrAppend(&out, "applied ", n, n == 1 ? " change" : " changes", ", generation ",
                    resp.generation(), "\n");
  }
  return out;
}

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& msg, bool pretty) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = pretty;
  opts.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(msg, &out, opts);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot print as JSON: ", status.ToString()));
  }
  if (!pretty) out.push_back('\n');  // add_whitespace already ends with one
  return out;
}

}  // namespace ballast::lbctl

namespace ballast::lbctl {

std::string FormatConfigDiff(const v1::ConfigDiffResponse& resp) {
  std::string out = absl::StrCat("mode ", resp.mode(), ", this node ", resp.self(), "\n");
  absl::StrAppend(&out, absl::StrFormat("%-16s %-7s %-7s %-9s %-14s %s\n", "NODE", "LEADER",
                                        "FROZEN", "REVISION", "CONFIG", "TABLES"));
  for (const v1::NodeRecord& n : resp.nodes()) {
    std::vector<std::string> tables;
    std::vector<std::pair<std::string, std::string>> sorted(n.table_hashes().begin(),
                                                            n.table_hashes().end());
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [vip, h] : sorted) tables.push_back(absl::StrCat(vip, "=", h.substr(0, 8)));
    absl::StrAppend(
        &out, absl::StrFormat("%-16s %-7s %-7s %-9d %-14s %s\n", n.node(), n.leader() ? "yes" : "-",
                              n.frozen() ? "yes" : "-", n.state_revision(),
                              n.config_hash().substr(0, 12), absl::StrJoin(tables, " ")));
  }
  if (resp.differences_size() == 0) {
    absl::StrAppend(&out, "differences: none\n");
  } else {
    absl::StrAppend(&out, "differences: ", resp.differences_size(), "\n");
    for (const std::string& d : resp.differences()) absl::StrAppend(&out, "  ", d, "\n");
  }
  return out;
}

}  // namespace ballast::lbctl
