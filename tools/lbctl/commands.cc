#include "tools/lbctl/commands.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "agent/base/status_macros.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/lbctl/address.h"
#include "tools/lbctl/drill_run.h"
#include "tools/lbctl/duration.h"
#include "tools/lbctl/format.h"
#include "tools/lbctl/quic_commands.h"
#include "tools/lbctl/rates.h"

namespace ballast::lbctl {

absl::StatusOr<Client*> Session::client() {
  if (client_ == nullptr) {
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(target_);
    if (!c.ok()) return c.status();
    client_ = std::move(*c);
  }
  return client_.get();
}

std::string Session::target_text() const {
  return target_.addr.empty() ? absl::StrCat("unix:", target_.socket) : target_.addr;
}

namespace {

void Print(std::FILE* out, absl::string_view text) {
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

}  // namespace

absl::Status Emit(const Args& args, std::FILE* out, const google::protobuf::Message& msg,
                  const std::string& human) {
  if (args.json) {
    BALLAST_ASSIGN_OR_RETURN(json, ToJson(msg, /*pretty=*/true));
    Print(out, json);
  } else {
    Print(out, human);
  }
  return absl::OkStatus();
}

namespace {

// ---- option helpers ---------------------------------------------------------

void NoOptions(CLI::App&, Args&) {}

void VipArg(CLI::App& cmd, Args& a) {
  cmd.add_option("VIP", a.vip, "ADDR:PORT/PROTO, e.g. 198.18.0.10:80/tcp, [2001:db8::10]:443/tcp")
      ->required();
}

void VipBackendArgs(CLI::App& cmd, Args& a) {
  VipArg(cmd, a);
  cmd.add_option("BACKEND", a.backend, "backend address, e.g. 198.18.1.10 or 2001:db8::1")
      ->required();
}

struct Target2 {
  v1::VipKey vip;
  std::string address;
};

absl::StatusOr<Target2> ParseVipBackend(const Args& a) {
  Target2 t;
  BALLAST_ASSIGN_OR_RETURN(vip, ParseVipKey(a.vip));
  BALLAST_ASSIGN_OR_RETURN(addr, ParseIp(a.backend));
  t.vip = vip;
  t.address = addr;
  return t;
}

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::ostringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("-f ", path, ": cannot read: ", std::strerror(errno)));
  }
  ss << in.rdbuf();
  return ss.str();
}

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    errors.push_back(absl::StrCat(line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int line, int column, const std::string& message) override {
    errors.push_back(absl::StrCat(line + 1, ":", column + 1, ": warning: ", message));
  }
  std::vector<std::string> errors;
};

absl::StatusOr<v1::Config> ReadConfig(const std::string& path) {
  BALLAST_ASSIGN_OR_RETURN(text, ReadInput(path));
  v1::Config config;
  CollectErrors errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a ballast.v1.Config in protobuf text format:\n  ",
                     absl::StrJoin(errors.errors, "\n  ")));
  }
  return config;
}

// ---- status ---------------------------------------------------------------------

void StatusOptions(CLI::App& cmd, Args& a) {
  cmd.add_option("VIP", a.vip, "only this VIP, e.g. 198.18.0.10:80/tcp (default: every VIP)");
  cmd.add_flag("-w,--watch", a.watch,
               "refresh every --interval, with packets/s and new flows/s per VIP and backend");
  cmd.add_option("--interval", a.interval,
                 "with --watch: time between refreshes, >= 200ms (default: 2s)")
      ->type_name("DURATION");
  cmd.add_option("--frames", a.frames, "with --watch: stop after this many (default: never)");
}

absl::StatusOr<v1::StatusResponse> FetchStatus(Session& s, const std::string& only) {
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::StatusResponse resp;
  BALLAST_RETURN_IF_ERROR(
      c->Call(c->status(), &v1::Status::Stub::GetStatus, v1::StatusRequest(), &resp));
  if (!only.empty()) {
    auto* vips = resp.mutable_vips();
    vips->erase(
        std::remove_if(vips->begin(), vips->end(),
                       [&](const v1::VipStatus& v) { return FormatVipKey(v.key()) != only; }),
        vips->end());
    if (vips->empty()) return absl::NotFoundError(absl::StrCat("vip ", only, " does not exist"));
  }
  return resp;
}

// status --watch: a frame per interval, the rates from the previous one. On
// a terminal each frame replaces the last; otherwise frames follow each
// other, separated by a blank line.
absl::Status WatchStatus(Session& s, const Args& a, const std::string& only, std::FILE* out) {
  if (a.json) {
    return absl::InvalidArgumentError(
        "--watch draws tables for a person; for JSON, run `lbctl -o json status` in a loop");
  }
  const std::string interval_text = a.interval.empty() ? "2s" : a.interval;
  BALLAST_ASSIGN_OR_RETURN(interval, ParseDuration(interval_text, "--interval"));
  if (interval < absl::Milliseconds(200)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--interval ", interval_text, " is below 200ms (each refresh reads the flows)"));
  }
  const bool tty = isatty(fileno(out)) != 0;
  std::optional<v1::StatusResponse> prev;
  absl::Time prev_at;
  for (uint64_t n = 0; a.frames == 0 || n < a.frames; ++n) {
    if (n > 0) absl::SleepFor(interval);
    BALLAST_ASSIGN_OR_RETURN(resp, FetchStatus(s, only));
    const absl::Time now = absl::Now();
    std::string frame =
        absl::StrCat("every ", absl::FormatDuration(interval), ", ",
                     absl::FormatTime("%H:%M:%S", now, absl::LocalTimeZone()), "\n\n",
                     FormatStatus(resp, now), "\n",
                     prev ? FormatRates(*prev, resp, absl::ToDoubleSeconds(now - prev_at))
                          : std::string("RATES: from the next refresh on\n"));
    Print(out, tty ? "\033[H\033[2J" : (n > 0 ? "\n" : ""));
    Print(out, frame);
    std::fflush(out);
    prev = std::move(resp);
    prev_at = now;
  }
  return absl::OkStatus();
}

absl::Status RunStatus(Session& s, const Args& a, std::FILE* out) {
  std::string only;
  if (!a.vip.empty()) {
    BALLAST_ASSIGN_OR_RETURN(key, ParseVipKey(a.vip));
    only = FormatVipKey(key);
  }
  if (a.watch) return WatchStatus(s, a, only, out);
  if (a.frames != 0 || !a.interval.empty()) {
    return absl::InvalidArgumentError("--interval and --frames go with --watch");
  }
  BALLAST_ASSIGN_OR_RETURN(resp, FetchStatus(s, only));
  return Emit(a, out, resp, FormatStatus(resp, absl::Now()));
}

// ---- flows ---------------------------------------------------------------------

void FlowsOptions(CLI::App& cmd, Args& a) {
  VipArg(cmd, a);
  cmd.add_option("BACKEND", a.backend, "only this backend's flows, e.g. 198.18.1.10");
  cmd.add_option("--limit", a.limit, "at most this many flows, 1..100000 (default 1000)");
}

absl::Status RunFlows(Session& s, const Args& a, std::FILE* out) {
  v1::ListFlowsRequest req;
  BALLAST_ASSIGN_OR_RETURN(vip, ParseVipKey(a.vip));
  *req.mutable_vip() = vip;
  if (!a.backend.empty()) {
    BALLAST_ASSIGN_OR_RETURN(addr, ParseIp(a.backend));
    req.set_backend(addr);
  }
  if (a.limit > 100000) {
    return absl::InvalidArgumentError(absl::StrCat("--limit ", a.limit, " is above 100000"));
  }
  req.set_limit(a.limit);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::ListFlowsResponse resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->status(), &v1::Status::Stub::ListFlows, req, &resp));
  return Emit(a, out, resp, FormatFlows(vip, resp));
}

// ---- vip ------------------------------------------------------------------------

void VipAddOptions(CLI::App& cmd, Args& a) {
  VipArg(cmd, a);
  cmd.add_option("--table-size", a.table_size,
                 "Maglev table size: a prime in 7..1048573 (default 65537)");
  cmd.add_option("--name", a.name, "free text for operators");
  cmd.add_option("--mode", a.vip_mode,
                 "encap (IP-in-IP, the default) or gue (IP in UDP to global.gue_port: backends' "
                 "NICs spread the flows by the UDP ports)")
      ->type_name("{encap,gue}");
  cmd.add_option("--backend", a.backends,
                 "ADDR[,weight=N], repeatable; weight 0..1000, default 100")
      ->type_name("ADDR[,weight=N]");
}

absl::Status RunVipAdd(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(key, ParseVipKey(a.vip));
  v1::AddVipRequest req;
  v1::Vip* vip = req.mutable_vip();
  *vip->mutable_key() = key;
  vip->set_table_size(a.table_size);
  vip->set_name(a.name);
  if (a.vip_mode == "encap") {
    vip->set_mode(v1::ENCAP);
  } else if (a.vip_mode == "gue") {
    vip->set_mode(v1::GUE);
  } else if (!a.vip_mode.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode '", a.vip_mode, "': encap (IP-in-IP) or gue (IP in UDP)"));
  }
  for (const std::string& text : a.backends) {
    BALLAST_ASSIGN_OR_RETURN(spec, ParseBackendSpec(text));
    v1::Backend* b = vip->add_backends();
    b->set_address(spec.address);
    b->set_weight(spec.weight.value_or(100));
  }
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->vips(), &v1::Vips::Stub::AddVip, req, &resp));
  return Emit(a, out, resp,
              absl::StrCat("added VIP ", FormatVipKey(key), " with ", vip->backends_size(),
                           vip->backends_size() == 1 ? " backend\n" : " backends\n"));
}

absl::Status RunVipDel(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(key, ParseVipKey(a.vip));
  v1::DeleteVipRequest req;
  *req.mutable_key() = key;
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->vips(), &v1::Vips::Stub::DeleteVip, req, &resp));
  return Emit(a, out, resp, absl::StrCat("deleted VIP ", FormatVipKey(key), "\n"));
}

absl::Status RunVipRelearn(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(key, ParseVipKey(a.vip));
  v1::RelearnHealthRequest req;
  *req.mutable_vip() = key;
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->vips(), &v1::Vips::Stub::RelearnHealth, req, &resp));
  return Emit(a, out, resp,
              absl::StrCat("VIP ", FormatVipKey(key),
                           ": health checking learns its baselines again from the next "
                           "evaluation (a pool frozen by a shift that stays then unfreezes)\n"));
}

absl::Status RunVipList(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::ListVipsResponse resp;
  BALLAST_RETURN_IF_ERROR(
      c->Call(c->vips(), &v1::Vips::Stub::ListVips, v1::ListVipsRequest(), &resp));
  return Emit(a, out, resp, FormatVips(resp));
}

void VipOwnershipOptions(CLI::App& cmd, Args& a) {
  VipArg(cmd, a);
  cmd.add_option("MODE", a.ownership,
                 "active-standby (one node forwards it: the holder of its lease) or all (every "
                 "node forwards it)")
      ->type_name("{active-standby,all}")
      ->required();
}

absl::Status RunVipSetOwnership(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(key, ParseVipKey(a.vip));
  v1::SetVipOwnershipRequest req;
  *req.mutable_vip() = key;
  std::string human;
  if (a.ownership == "active-standby") {
    req.set_ownership(v1::ACTIVE_STANDBY);
    human =
        "active-standby: stopped on every node until one holds its lease, then forwarded by "
        "that node only (cluster mode)";
  } else if (a.ownership == "all") {
    req.set_ownership(v1::OWNERSHIP_NONE);
    human = "all: forwarded by every node";
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "ownership '", a.ownership, "': active-standby (one node forwards the VIP) or all"));
  }
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(
      c->Call(c->cluster(), &v1::ClusterOps::Stub::SetVipOwnership, req, &resp));
  return Emit(a, out, resp, absl::StrCat("vip ", FormatVipKey(key), ": ownership ", human, "\n"));
}

// ---- drill ----------------------------------------------------------------------

void DrillOptions(CLI::App& cmd, Args& a) {
  cmd.add_option("--vip", a.vip, "the ACTIVE_STANDBY VIP to fail over, e.g. 198.18.0.10:80/tcp")
      ->required();
  cmd.add_option("--mode", a.drill_mode,
                 "fence: the owner gives the VIP up (API); stop: SIGSTOP to the owner's lbagent "
                 "(only on its host; SIGCONT at the end)")
      ->type_name("{fence,stop}")
      ->capture_default_str();
  cmd.add_option("--timeout", a.drill_timeout,
                 "give up waiting for traffic on a standby and a stable pool after this (5s..5m; "
                 "the global --timeout, before `drill`, is the per-call deadline)")
      ->type_name("DURATION")
      ->capture_default_str();
  cmd.add_option("--stable-window", a.stable_window,
                 "the new owner's pool is stable once unchanged for this long")
      ->type_name("DURATION")
      ->capture_default_str();
  cmd.add_option("--node", a.drill_nodes,
                 "NAME=ADDR: reach node NAME at ADDR (socket path or HOST:PORT) instead of the "
                 "address it publishes; repeatable")
      ->type_name("NAME=ADDR");
}

// ---- backend --------------------------------------------------------------------

void BackendAddOptions(CLI::App& cmd, Args& a) {
  VipBackendArgs(cmd, a);
  cmd.add_option("--weight", a.add_weight, "nominal weight 0..1000 (0 = no new flows)")
      ->capture_default_str();
}

absl::Status RunBackendAdd(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(t, ParseVipBackend(a));
  v1::AddBackendRequest req;
  *req.mutable_vip() = t.vip;
  req.mutable_backend()->set_address(t.address);
  req.mutable_backend()->set_weight(a.add_weight);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->backends(), &v1::Backends::Stub::AddBackend, req, &resp));
  return Emit(a, out, resp,
              absl::StrCat("added backend ", t.address, " to VIP ", FormatVipKey(t.vip),
                           " with weight ", a.add_weight, "\n"));
}

absl::Status RunBackendDel(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(t, ParseVipBackend(a));
  v1::DeleteBackendRequest req;
  *req.mutable_vip() = t.vip;
  req.set_address(t.address);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->backends(), &v1::Backends::Stub::DeleteBackend, req, &resp));
  return Emit(a, out, resp,
              absl::StrCat("deleted backend ", t.address, " from VIP ", FormatVipKey(t.vip), "\n"));
}

void BackendWeightOptions(CLI::App& cmd, Args& a) {
  VipBackendArgs(cmd, a);
  cmd.add_option("WEIGHT", a.weight, "nominal weight 0..1000 (0 = no new flows)")->required();
}

absl::Status RunBackendWeight(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(t, ParseVipBackend(a));
  uint32_t weight = 0;
  if (!absl::SimpleAtoi(a.weight, &weight) || a.weight.empty() || a.weight[0] == '+' ||
      a.weight[0] == '-') {
    return absl::InvalidArgumentError(
        absl::StrCat("weight '", a.weight, "' is not a whole number in 0..1000"));
  }
  v1::SetWeightRequest req;
  *req.mutable_vip() = t.vip;
  req.set_address(t.address);
  req.set_weight(weight);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->backends(), &v1::Backends::Stub::SetWeight, req, &resp));
  return Emit(a, out, resp,
              absl::StrCat("backend ", t.address, " of VIP ", FormatVipKey(t.vip),
                           ": nominal weight ", weight, "\n"));
}

void BackendDrainOptions(CLI::App& cmd, Args& a) {
  VipBackendArgs(cmd, a);
  cmd.add_option("--deadline", a.deadline,
                 "how long existing flows may stay, e.g. 60s or 5m (default: the agent's "
                 "drain_timeout_s)")
      ->type_name("DURATION");
}

absl::Status RunBackendDrain(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(t, ParseVipBackend(a));
  uint32_t deadline_s = 0;
  if (!a.deadline.empty()) {
    BALLAST_ASSIGN_OR_RETURN(d, ParseWholeSeconds(a.deadline, "--deadline"));
    if (d == 0) {
      return absl::InvalidArgumentError(
          "--deadline 0 would evict at once; use `lbctl backend del` for that, or give a "
          "positive deadline");
    }
    deadline_s = d;
  }
  v1::DrainRequest req;
  *req.mutable_vip() = t.vip;
  req.set_address(t.address);
  req.set_deadline_s(deadline_s);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->backends(), &v1::Backends::Stub::Drain, req, &resp));
  return Emit(a, out, resp,
              absl::StrCat("draining backend ", t.address, " of VIP ", FormatVipKey(t.vip),
                           ": no new flows; existing flows may stay ",
                           deadline_s > 0 ? absl::StrCat(deadline_s, "s")
                                          : std::string("until the agent's drain timeout"),
                           "\n"));
}

template <typename Req>
absl::Status RunBackendSimple(Session& s, const Args& a, std::FILE* out,
                              grpc::Status (v1::Backends::Stub::*method)(grpc::ClientContext*,
                                                                         const Req&, v1::Empty*),
                              absl::string_view done) {
  BALLAST_ASSIGN_OR_RETURN(t, ParseVipBackend(a));
  Req req;
  *req.mutable_vip() = t.vip;
  req.set_address(t.address);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->backends(), method, req, &resp));
  return Emit(
      a, out, resp,
      absl::StrCat("backend ", t.address, " of VIP ", FormatVipKey(t.vip), ": ", done, "\n"));
}

absl::Status RunBackendUndrain(Session& s, const Args& a, std::FILE* out) {
  return RunBackendSimple(s, a, out, &v1::Backends::Stub::Undrain, "undrained");
}

absl::Status RunBackendRelease(Session& s, const Args& a, std::FILE* out) {
  return RunBackendSimple(s, a, out, &v1::Backends::Stub::Release, "released");
}

// ---- config ---------------------------------------------------------------------

absl::Status RunConfigGet(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Config resp;
  BALLAST_RETURN_IF_ERROR(
      c->Call(c->config(), &v1::ConfigService::Stub::GetConfig, v1::GetConfigRequest(), &resp));
  std::string text;
  google::protobuf::TextFormat::PrintToString(resp, &text);
  return Emit(a, out, resp, text);
}

void ConfigFileOption(CLI::App& cmd, Args& a) {
  cmd.add_option("-f,--file", a.file,
                 "ballast.v1.Config in protobuf text format (the config file's `initial` "
                 "section); - for stdin")
      ->type_name("FILE")
      ->required();
  cmd.add_flag("--allow-empty", a.allow_empty, "allow a config with no VIPs (removes every VIP)");
}

void ConfigApplyOptions(CLI::App& cmd, Args& a) {
  ConfigFileOption(cmd, a);
  cmd.add_flag("--dry-run", a.dry_run, "show the diff, change nothing");
}

absl::Status ApplyConfig(Session& s, const Args& a, std::FILE* out, bool dry_run) {
  BALLAST_ASSIGN_OR_RETURN(config, ReadConfig(a.file));
  if (config.vips_size() == 0 && !a.allow_empty) {
    return absl::InvalidArgumentError(
        absl::StrCat(a.file,
                     " has no VIPs: applying it would remove every VIP. Pass --allow-empty if "
                     "that is what you want"));
  }
  v1::ApplyConfigRequest req;
  *req.mutable_config() = config;
  req.set_dry_run(dry_run);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::ApplyConfigResponse resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->config(), &v1::ConfigService::Stub::ApplyConfig, req, &resp));
  return Emit(a, out, resp, FormatApply(resp, dry_run));
}

absl::Status RunConfigApply(Session& s, const Args& a, std::FILE* out) {
  return ApplyConfig(s, a, out, a.dry_run);
}

void ConfigDiffOptions(CLI::App& cmd, Args& a) {
  cmd.add_option("-f,--file", a.file,
                 "ballast.v1.Config in protobuf text format: show what applying it would change "
                 "(without it: compare the cluster's nodes)")
      ->type_name("FILE");
  cmd.add_flag("--allow-empty", a.allow_empty, "allow a config with no VIPs (removes every VIP)");
}

absl::Status RunConfigDiff(Session& s, const Args& a, std::FILE* out) {
  if (!a.file.empty()) return ApplyConfig(s, a, out, /*dry_run=*/true);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::ConfigDiffResponse resp;
  BALLAST_RETURN_IF_ERROR(
      c->Call(c->config(), &v1::ConfigService::Stub::ConfigDiff, v1::ConfigDiffRequest(), &resp));
  return Emit(a, out, resp, FormatConfigDiff(resp));
}

// ---- events, audit, teardown ------------------------------------------------------------

void EventsOptions(CLI::App& cmd, Args& a) {
  cmd.add_option("--count", a.count, "exit after this many events (default: run until ^C)");
}

absl::Status RunEvents(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  std::unique_ptr<grpc::ClientContext> ctx = c->Context(/*stream=*/true);
  std::unique_ptr<grpc::ClientReader<v1::Event>> reader =
      c->status().WatchEvents(ctx.get(), v1::WatchEventsRequest());
  v1::Event event;
  uint64_t n = 0;
  while (reader->Read(&event)) {
    if (a.json) {
      BALLAST_ASSIGN_OR_RETURN(json, ToJson(event, /*pretty=*/false));
      Print(out, json);
    } else {
      Print(out, FormatEvent(event));
    }
    if (a.count > 0 && ++n >= a.count) {
      ctx->TryCancel();
      reader->Finish();
      return absl::OkStatus();
    }
  }
  return api::ToAbslStatus(reader->Finish());
}

void AuditOptions(CLI::App& cmd, Args& a) {
  cmd.add_option("--since", a.since, "how far back, e.g. 1h, 30m, 7d")
      ->type_name("DURATION")
      ->capture_default_str();
  cmd.add_option("--limit", a.limit, "at most this many records (0 = all)");
}

absl::Status RunAudit(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(since, ParseDuration(a.since, "--since"));
  v1::QueryAuditRequest req;
  req.set_since_unix_ms(std::max<int64_t>(0, absl::ToUnixMillis(absl::Now() - since)));
  req.set_limit(a.limit);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::QueryAuditResponse resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->audit(), &v1::Audit::Stub::QueryAudit, req, &resp));
  return Emit(a, out, resp, FormatAudit(resp));
}

void DigestOptions(CLI::App& cmd, Args& a) {
  cmd.add_option("--since", a.digest_since, "the period, e.g. 7d, 24h")
      ->type_name("DURATION")
      ->capture_default_str();
}

absl::Status RunDigest(Session& s, const Args& a, std::FILE* out) {
  BALLAST_ASSIGN_OR_RETURN(since, ParseDuration(a.digest_since, "--since"));
  const absl::Time now = absl::Now();
  v1::QueryAuditRequest req;
  req.set_since_unix_ms(std::max<int64_t>(0, absl::ToUnixMillis(now - since)));
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::QueryAuditResponse resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->audit(), &v1::Audit::Stub::QueryAudit, req, &resp));
  return Emit(a, out, resp, FormatDigest(resp, since, now));
}

void TeardownOptions(CLI::App& cmd, Args& a) { cmd.add_flag("--yes", a.yes, "really tear down"); }

absl::Status RunTeardown(Session& s, const Args& a, std::FILE* out) {
  if (!a.yes) {
    return absl::InvalidArgumentError(
        "teardown detaches the XDP program, unpins every map and stops lbagent: traffic to "
        "every VIP stops being balanced. Run `lbctl teardown --yes` if you mean it");
  }
  v1::TeardownRequest req;
  req.set_confirm(true);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::Empty resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->admin(), &v1::Admin::Stub::Teardown, req, &resp));
  return Emit(a, out, resp, "torn down: program detached, maps unpinned, lbagent stopping\n");
}

void ReasonOptions(CLI::App& cmd, Args& a) {
  cmd.add_option("--reason", a.reason, "why, for the audit log (at most 200 characters)");
}

void VipReasonOptions(CLI::App& cmd, Args& a) {
  VipArg(cmd, a);
  ReasonOptions(cmd, a);
}

absl::Status RunFlowHashRotate(Session& s, const Args& a, std::FILE* out) {
  v1::RotateFlowHashSeedRequest req;
  req.set_reason(a.reason);
  BALLAST_ASSIGN_OR_RETURN(c, s.client());
  v1::RotateFlowHashSeedResponse resp;
  BALLAST_RETURN_IF_ERROR(c->Call(c->admin(), &v1::Admin::Stub::RotateFlowHashSeed, req, &resp));
  return Emit(a, out, resp,
              absl::StrCat(
                  "flow hash seed rotated (generation ", resp.generation(), "); the ",
                  resp.previous_was_public() ? "public seed of earlier builds" : "seed it replaced",
                  " stays as the previous one\n"));
}

constexpr Command kCommands[] = {
    {"status", "", "per VIP and backend: weights, state, slots, flows, counters (VIP: only it)",
     StatusOptions, RunStatus},
    {"flows", "",
     "a VIP's connections (BACKEND: only its), like ipvsadm -Lnc: client, backend, state, "
     "idle time, expiry",
     FlowsOptions, RunFlows},
    {"vip", "add", "add a VIP, optionally with backends", VipAddOptions, RunVipAdd},
    {"vip", "del", "delete a VIP and its backends", VipArg, RunVipDel},
    {"vip", "list", "list VIPs and their backends", NoOptions, RunVipList},
    {"vip", "set-ownership",
     "who forwards a VIP in a cluster: active-standby (the lease holder) or all",
     VipOwnershipOptions, RunVipSetOwnership},
    {"vip", "relearn",
     "accept a VIP's pool as it behaves now as its new normal: health checking learns its "
     "baselines again, so a pool frozen by the shift unfreezes (on this router)",
     VipArg, RunVipRelearn},
    {"vip", "quic-config",
     "print a QUIC VIP backend's QUIC-LB configuration (config IDs, lengths, server ID, key) "
     "for the server to load (docs/operations.md); admin only: it holds the key",
     VipBackendArgs, RunVipQuicConfig},
    {"vip", "quic-rotate",
     "start a new QUIC-LB configuration of a QUIC VIP (next config ID, new key); the current "
     "one stays live until quic-retire",
     VipReasonOptions, RunVipQuicRotate},
    {"vip", "quic-retire", "end a QUIC VIP's previous QUIC-LB configuration (after a rotation)",
     VipReasonOptions, RunVipQuicRetire},
    {"backend", "add", "add a backend to a VIP", BackendAddOptions, RunBackendAdd},
    {"backend", "del", "delete a backend (its flows are re-steered)", VipBackendArgs,
     RunBackendDel},
    {"backend", "weight", "set a backend's nominal weight", BackendWeightOptions, RunBackendWeight},
    {"backend", "drain", "stop new flows to a backend; existing flows stay until the deadline",
     BackendDrainOptions, RunBackendDrain},
    {"backend", "undrain", "return a draining backend to service", VipBackendArgs,
     RunBackendUndrain},
    {"backend", "release", "release a backend that flap damping pinned out", VipBackendArgs,
     RunBackendRelease},
    {"config", "get", "print the running config (protobuf text format)", NoOptions, RunConfigGet},
    {"config", "apply", "apply a config file, all or nothing (--dry-run: show the diff)",
     ConfigApplyOptions, RunConfigApply},
    {"config", "diff",
     "compare the cluster's nodes (config and Maglev table hashes); -f FILE: show what "
     "applying FILE would change",
     ConfigDiffOptions, RunConfigDiff},
    {"events", "", "stream the agent's events", EventsOptions, RunEvents},
    {"audit", "", "show the audit log", AuditOptions, RunAudit},
    {"digest", "", "summarise a period of the audit log (actions, backends, alerts)", DigestOptions,
     RunDigest},
    {"drill", "",
     "fail an active/standby VIP over on purpose and measure it: failover time, time to a "
     "stable pool (<= 5 s), backend flaps (0), config differences (0); needs live traffic",
     DrillOptions, RunDrill},
    {"teardown", "", "detach the program, unpin the maps, stop lbagent", TeardownOptions,
     RunTeardown},
    {"flow-hash", "rotate",
     "draw a new secret flow hash seed for the cluster; the replaced one stays as the previous "
     "seed, so no connection moves (docs/dataplane.md)",
     ReasonOptions, RunFlowHashRotate},
};

}  // namespace

std::span<const Command> Commands() { return kCommands; }

}  // namespace ballast::lbctl
