#include "agent/api/tests/recording_engine.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace ballast::api::testing {

std::string KeyText(const v1::VipKey& key) {
  return absl::StrCat(key.address(), ":", key.port(), "/",
                      key.protocol() == v1::TCP ? "tcp" : "udp");
}

namespace {
bool SameKey(const v1::VipKey& a, const v1::VipKey& b) {
  return a.address() == b.address() && a.port() == b.port() && a.protocol() == b.protocol();
}
}  // namespace

void RecordingEngine::FailWith(absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_with_ = std::move(status);
}

std::vector<RecordedCall> RecordingEngine::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

void RecordingEngine::Emit(const v1::Event& event) {
  std::vector<EventSink> sinks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [h, s] : sinks_) sinks.push_back(s);
  }
  for (auto& s : sinks) s(event);
}

size_t RecordingEngine::subscribers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sinks_.size();
}

void RecordingEngine::SetStatus(v1::StatusResponse status) {
  std::lock_guard<std::mutex> lock(mu_);
  status_ = std::move(status);
}

absl::Status RecordingEngine::Record(std::string method, const core::Actor& actor,
                                     std::string detail) {
  calls_.push_back({std::move(method), actor.name, std::move(detail)});
  if (!fail_with_.ok()) return fail_with_;
  if (calls_.back().method != "GetStatus" && calls_.back().method != "ListVips") {
    v1::AuditRecord r;
    r.set_unix_ms(absl::ToUnixMillis(absl::Now()));
    r.set_actor(actor.name);
    r.set_action(calls_.back().method);
    r.set_result("ok");
    audit_.push_back(r);
  }
  return absl::OkStatus();
}

v1::Vip* RecordingEngine::FindVip(const v1::VipKey& key) {
  for (v1::Vip& v : vips_) {
    if (SameKey(v.key(), key)) return &v;
  }
  return nullptr;
}

absl::StatusOr<v1::Backend*> RecordingEngine::FindBackend(const v1::VipKey& key,
                                                          const std::string& address) {
  v1::Vip* vip = FindVip(key);
  if (vip == nullptr) return absl::NotFoundError(absl::StrCat("vip ", KeyText(key), ": not found"));
  for (v1::Backend& b : *vip->mutable_backends()) {
    if (b.address() == address) return &b;
  }
  return absl::NotFoundError(
      absl::StrCat("vip ", KeyText(key), ": backend ", address, " not found"));
}

absl::Status RecordingEngine::AddVip(const v1::Vip& vip, const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("AddVip", actor, KeyText(vip.key())); !s.ok()) return s;
  if (FindVip(vip.key()) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("vip ", KeyText(vip.key()), ": already exists"));
  }
  vips_.push_back(vip);
  ++generation_;
  return absl::OkStatus();
}

absl::Status RecordingEngine::DeleteVip(const v1::VipKey& key, const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("DeleteVip", actor, KeyText(key)); !s.ok()) return s;
  for (auto it = vips_.begin(); it != vips_.end(); ++it) {
    if (SameKey(it->key(), key)) {
      vips_.erase(it);
      ++generation_;
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(absl::StrCat("vip ", KeyText(key), ": not found"));
}

std::vector<v1::Vip> RecordingEngine::ListVips() const {
  std::lock_guard<std::mutex> lock(mu_);
  return vips_;
}

absl::Status RecordingEngine::AddBackend(const v1::VipKey& vip, const v1::Backend& backend,
                                         const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s =
          Record("AddBackend", actor,
                 absl::StrCat(KeyText(vip), " ", backend.address(), " weight=", backend.weight()));
      !s.ok()) {
    return s;
  }
  v1::Vip* v = FindVip(vip);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat("vip ", KeyText(vip), ": not found"));
  for (const v1::Backend& b : v->backends()) {
    if (b.address() == backend.address()) {
      return absl::AlreadyExistsError(
          absl::StrCat("vip ", KeyText(vip), ": backend ", backend.address(), " already exists"));
    }
  }
  *v->add_backends() = backend;
  ++generation_;
  return absl::OkStatus();
}

absl::Status RecordingEngine::DeleteBackend(const v1::VipKey& vip, const std::string& address,
                                            const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("DeleteBackend", actor, absl::StrCat(KeyText(vip), " ", address));
      !s.ok()) {
    return s;
  }
  v1::Vip* v = FindVip(vip);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat("vip ", KeyText(vip), ": not found"));
  auto* bs = v->mutable_backends();
  for (int i = 0; i < bs->size(); ++i) {
    if (bs->Get(i).address() == address) {
      bs->DeleteSubrange(i, 1);
      ++generation_;
      return absl::OkStatus();
    }
  }
  return absl::NotFoundError(
      absl::StrCat("vip ", KeyText(vip), ": backend ", address, " not found"));
}

absl::Status RecordingEngine::SetWeight(const v1::VipKey& vip, const std::string& address,
                                        uint32_t weight, const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s =
          Record("SetWeight", actor, absl::StrCat(KeyText(vip), " ", address, " weight=", weight));
      !s.ok()) {
    return s;
  }
  if (weight > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("backend ", address, ": weight ", weight, " is out of range 0..1000"));
  }
  absl::StatusOr<v1::Backend*> b = FindBackend(vip, address);
  if (!b.ok()) return b.status();
  (*b)->set_weight(weight);
  ++generation_;
  return absl::OkStatus();
}

absl::Status RecordingEngine::Drain(const v1::VipKey& vip, const std::string& address,
                                    uint32_t deadline_s, const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("Drain", actor,
                              absl::StrCat(KeyText(vip), " ", address, " deadline=", deadline_s));
      !s.ok()) {
    return s;
  }
  return FindBackend(vip, address).status();
}

absl::Status RecordingEngine::Undrain(const v1::VipKey& vip, const std::string& address,
                                      const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("Undrain", actor, absl::StrCat(KeyText(vip), " ", address));
      !s.ok()) {
    return s;
  }
  return FindBackend(vip, address).status();
}

absl::Status RecordingEngine::RelearnHealth(const v1::VipKey& vip, const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("RelearnHealth", actor, KeyText(vip)); !s.ok()) return s;
  if (FindVip(vip) == nullptr) {
    return absl::NotFoundError(absl::StrCat("vip ", KeyText(vip), ": not found"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::QuicConfigChangeResponse> RecordingEngine::RotateQuicConfig(
    const v1::VipKey& vip, const std::string& reason, const core::Actor& actor) {
  return QuicChange("RotateQuicConfig", vip, reason, actor);
}

absl::StatusOr<v1::QuicConfigChangeResponse> RecordingEngine::RetireQuicConfig(
    const v1::VipKey& vip, const std::string& reason, const core::Actor& actor) {
  return QuicChange("RetireQuicConfig", vip, reason, actor);
}

absl::StatusOr<v1::QuicConfigChangeResponse> RecordingEngine::QuicChange(const std::string& method,
                                                                         const v1::VipKey& vip,
                                                                         const std::string& reason,
                                                                         const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record(method, actor, absl::StrCat(KeyText(vip), " ", reason)); !s.ok()) {
    return s;
  }
  if (FindVip(vip) == nullptr) {
    return absl::NotFoundError(absl::StrCat("vip ", KeyText(vip), ": not found"));
  }
  // Config 1 after config 0: a rotation keeps 0 beside it, a retirement ends 0.
  v1::QuicConfigChangeResponse resp;
  resp.set_generation(++generation_);
  resp.set_config_id(1);
  resp.set_has_previous(method == "RotateQuicConfig");
  resp.set_previous_config_id(0);
  return resp;
}

absl::StatusOr<v1::ExportQuicConfigResponse> RecordingEngine::ExportQuicConfig(
    const v1::VipKey& vip, const std::string& address, const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("ExportQuicConfig", actor, absl::StrCat(KeyText(vip), " ", address));
      !s.ok()) {
    return s;
  }
  if (auto b = FindBackend(vip, address); !b.ok()) return b.status();
  if (!quic_export_) return absl::NotFoundError(absl::StrCat("vip ", KeyText(vip), ": not QUIC"));
  return *quic_export_;
}

void RecordingEngine::SetQuicExport(v1::ExportQuicConfigResponse resp) {
  std::lock_guard<std::mutex> lock(mu_);
  quic_export_ = std::move(resp);
}

absl::Status RecordingEngine::Release(const v1::VipKey& vip, const std::string& address,
                                      const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("Release", actor, absl::StrCat(KeyText(vip), " ", address));
      !s.ok()) {
    return s;
  }
  return FindBackend(vip, address).status();
}

absl::StatusOr<v1::ListFlowsResponse> RecordingEngine::ListFlows(
    const v1::ListFlowsRequest& request) const {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back(
      {"ListFlows", "",
       absl::StrCat(KeyText(request.vip()), " ", request.backend(), " limit=", request.limit())});
  if (!fail_with_.ok()) return fail_with_;
  for (const v1::Vip& v : vips_) {
    if (SameKey(v.key(), request.vip())) return flows_;
  }
  return absl::NotFoundError(absl::StrCat("vip ", KeyText(request.vip()), " does not exist"));
}

void RecordingEngine::SetFlows(v1::ListFlowsResponse flows) {
  std::lock_guard<std::mutex> lock(mu_);
  flows_ = std::move(flows);
}

absl::StatusOr<v1::StatusResponse> RecordingEngine::GetStatus() const {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back({"GetStatus", "", ""});
  if (!fail_with_.ok()) return fail_with_;
  if (status_) return *status_;
  v1::StatusResponse st;
  st.set_config_generation(generation_);
  for (const v1::Vip& v : vips_) {
    v1::VipStatus* vs = st.add_vips();
    *vs->mutable_key() = v.key();
    vs->set_name(v.name());
    vs->set_table_size(v.table_size() == 0 ? 65537 : v.table_size());
    vs->set_mode(v.mode());
    for (const v1::Backend& b : v.backends()) {
      v1::BackendStatus* bs = vs->add_backends();
      bs->set_address(b.address());
      bs->set_nominal_weight(b.weight());
      bs->set_effective_weight(b.weight());
      bs->set_state("active");
      bs->set_score(100);
    }
  }
  return st;
}

v1::Config RecordingEngine::GetConfig() const {
  std::lock_guard<std::mutex> lock(mu_);
  v1::Config c;
  for (const v1::Vip& v : vips_) *c.add_vips() = v;
  return c;
}

absl::StatusOr<v1::ApplyConfigResponse> RecordingEngine::ApplyConfig(const v1::Config& config,
                                                                     bool dry_run,
                                                                     const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("ApplyConfig", actor,
                              absl::StrCat(dry_run ? "dry_run " : "", config.vips_size(), " vips"));
      !s.ok()) {
    return s;
  }
  v1::ApplyConfigResponse resp;
  for (const v1::Vip& v : vips_) {
    bool kept = false;
    for (const v1::Vip& n : config.vips()) kept |= SameKey(n.key(), v.key());
    if (!kept) resp.add_diff(absl::StrCat("- vip ", KeyText(v.key())));
  }
  for (const v1::Vip& n : config.vips()) {
    if (FindVip(n.key()) == nullptr) resp.add_diff(absl::StrCat("+ vip ", KeyText(n.key())));
  }
  if (!dry_run) {
    vips_.assign(config.vips().begin(), config.vips().end());
    ++generation_;
  }
  resp.set_generation(generation_);
  return resp;
}

absl::StatusOr<std::vector<v1::AuditRecord>> RecordingEngine::QueryAudit(int64_t since_unix_ms,
                                                                         uint32_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fail_with_.ok()) return fail_with_;
  std::vector<v1::AuditRecord> out;
  for (const v1::AuditRecord& r : audit_) {
    if (r.unix_ms() < since_unix_ms) continue;
    if (limit > 0 && out.size() >= limit) break;
    out.push_back(r);
  }
  return out;
}

uint64_t RecordingEngine::Subscribe(EventSink sink) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t h = next_handle_++;
  sinks_[h] = std::move(sink);
  return h;
}

void RecordingEngine::Unsubscribe(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  sinks_.erase(handle);
}

absl::Status RecordingEngine::Teardown(const core::Actor& actor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = Record("Teardown", actor, ""); !s.ok()) return s;
  shutdown_ = true;
  return absl::OkStatus();
}

bool RecordingEngine::ShutdownRequested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutdown_;
}

}  // namespace ballast::api::testing
