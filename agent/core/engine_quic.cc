// RouterEngine: QUIC-LB requests (rotation, retirement, a backend's
// configuration export). The state's part is quic_ids.h; the data plane
// gets the result through the image (engine_program.cc).
#include "absl/strings/str_cat.h"
#include "agent/core/engine_util.h"
#include "agent/core/log.h"
#include "agent/core/names.h"
#include "agent/core/quic_ids.h"
#include "agent/core/router_engine.h"

namespace ballast::core {

using namespace engine_util;  // NOLINT: the engine's own helpers

namespace {

absl::Status CheckReason(const std::string& reason) {
  if (reason.size() > 200) {
    return absl::InvalidArgumentError(
        absl::StrCat("reason: ", reason.size(), " characters; at most 200"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::QuicConfigChangeResponse> RouterEngine::ChangeQuicConfig(
    const v1::VipKey& vip, const std::string& reason, bool rotate, const Actor& actor) {
  if (auto s = CheckReason(reason); !s.ok()) return s;
  auto typed = ToDataplaneKey(vip);
  if (!typed.ok()) return typed.status();
  const std::string key = VipKeyText(vip);
  // What is audited: the VIP and the reason, never a key.
  v1::RotateQuicConfigRequest req;
  *req.mutable_vip() = vip;
  req.set_reason(reason);
  Mutation m;
  m.audit.push_back({rotate ? "rotate_quic_config" : "retire_quic_config", key, "", ToJson(req)});
  m.scoped = true;
  m.scope.push_back(CanonicalVipKey(vip));
  m.ids_changed = false;
  v1::QuicConfigChangeResponse resp;
  auto r = Commit(
      actor, std::move(m),
      [&](v1::State& st, Mutation& mm) -> absl::Status {
        const v1::Vip* v = FindVip(st, *typed);
        if (v == nullptr) return absl::NotFoundError(absl::StrCat("vip ", key, " does not exist"));
        v1::QuicVipState* q = nullptr;
        for (v1::QuicVipState& s : *st.mutable_quic()) {
          if (SameVip(s.vip(), *typed)) q = &s;
        }
        if (!v->has_quic_lb() || q == nullptr) {
          return absl::FailedPreconditionError(
              absl::StrCat("vip ", key, " is not a QUIC VIP (no quic_lb section)"));
        }
        if (rotate) {
          if (auto s = RotateQuic(q, v->quic_lb(), clock_->NowUnixMs(), options_.quic_key_source);
              !s.ok()) {
            return s;
          }
          resp.set_has_previous(true);
          resp.set_previous_config_id(q->configs(1).config_id());
        } else {
          auto retired = RetireQuicPrevious(q);
          if (!retired.ok()) return retired.status();
          resp.set_previous_config_id(*retired);
        }
        resp.set_config_id(q->configs(0).config_id());
        mm.events.push_back(MakeEvent(
            rotate ? "quic_config_rotated" : "quic_config_retired", key, "",
            rotate ? absl::StrCat("QUIC-LB config_id ", resp.config_id(), " started; config_id ",
                                  resp.previous_config_id(), " stays live until retired")
                   : absl::StrCat("QUIC-LB config_id ", resp.previous_config_id(),
                                  " retired; config_id ", resp.config_id(), " is the only one")));
        return absl::OkStatus();
      },
      false, absl::StatusCode::kFailedPrecondition);
  if (!r.ok()) return r.status();
  resp.set_generation(r->generation);
  return resp;
}

absl::StatusOr<v1::QuicConfigChangeResponse> RouterEngine::RotateQuicConfig(
    const v1::VipKey& vip, const std::string& reason, const Actor& actor) {
  return ChangeQuicConfig(vip, reason, /*rotate=*/true, actor);
}

absl::StatusOr<v1::QuicConfigChangeResponse> RouterEngine::RetireQuicConfig(
    const v1::VipKey& vip, const std::string& reason, const Actor& actor) {
  return ChangeQuicConfig(vip, reason, /*rotate=*/false, actor);
}

absl::StatusOr<v1::ExportQuicConfigResponse> RouterEngine::ExportQuicConfig(
    const v1::VipKey& vip, const std::string& address, const Actor& actor) {
  absl::StatusOr<v1::ExportQuicConfigResponse> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out = ExportQuicConfigOf(*state_, vip, address);
  }
  // Who took a copy of the keys is audited; the keys are not.
  v1::ExportQuicConfigRequest req;
  *req.mutable_vip() = vip;
  req.set_address(address);
  v1::AuditRecord rec;
  rec.set_unix_ms(clock_->NowUnixMs());
  rec.set_actor(actor.name.empty() ? "unknown" : actor.name);
  rec.set_action("export_quic_config");
  rec.set_vip(VipKeyText(vip));
  rec.set_backend(address);
  rec.set_inputs_json(ToJson(req));
  rec.set_result(out.ok() ? "ok" : std::string(out.status().ToString()));
  if (auto s = audit_->Append(rec); !s.ok()) {
    Log(LogLevel::kError, "audit record dropped: a QUIC-LB configuration export is unaudited",
        {{"vip", rec.vip()}, {"backend", address}, {"error", std::string(s.message())}});
  }
  return out;
}

}  // namespace ballast::core
