// QUIC-LB in the state (agent/core/quic_ids.h): the config's quic_lb
// validated by the data plane's rule, server IDs assigned, kept, retired
// and not reused within the grace, configurations rotated and retired, the
// data plane programmed from the state, and keys in no audit record or
// status.
#include "agent/core/quic_ids.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "agent/core/ids.h"
#include "agent/core/tests/test_util.h"

namespace ballast::core {
namespace {

using testing::DataplaneText;
using testing::Key;
using testing::MakeBackend;
using testing::SmallConfig;
using testing::StartEngine;
using testing::TempDir;

const Actor kOp{"operator:test"};
constexpr int64_t kT0 = 1'700'000'000'000;

// Keys "QUIC-SECRET-KEY" + a counter: easy to look for in text.
struct CountingKeys {
  uint8_t next = 'A';
  QuicKeySource source() {
    return [this]() -> absl::StatusOr<dataplane::QuicKey> {
      dataplane::QuicKey k;
      const std::string text = "QUIC-SECRET-KEY";
      std::copy(text.begin(), text.end(), k.begin());
      k[15] = next++;
      return k;
    };
  }
};

v1::Vip QuicVip(uint32_t sid_len, uint32_t nonce_len, bool encrypted,
                std::vector<std::string> backends) {
  v1::Vip v;
  *v.mutable_key() = Key("198.18.0.20", 443, v1::UDP);
  v.set_table_size(251);
  v.mutable_quic_lb()->set_server_id_len(sid_len);
  v.mutable_quic_lb()->set_nonce_len(nonce_len);
  v.mutable_quic_lb()->set_encrypted(encrypted);
  for (const std::string& b : backends) *v.add_backends() = MakeBackend(b, 1);
  return v;
}

v1::State StateOf(const v1::Vip& vip) {
  v1::State st;
  *st.mutable_config() = SmallConfig();
  *st.mutable_config()->add_vips() = vip;
  REQUIRE(AssignIds(&st).ok());
  return st;
}

std::map<std::string, uint64_t> Ids(const v1::State& st) {
  REQUIRE(st.quic_size() == 1);
  std::map<std::string, uint64_t> out;
  for (const v1::QuicServerId& s : st.quic(0).servers()) out[s.address()] = s.server_id();
  return out;
}

void SetBackends(v1::State* st, std::vector<std::string> backends) {
  v1::Vip* v = st->mutable_config()->mutable_vips(st->config().vips_size() - 1);
  v->clear_backends();
  for (const std::string& b : backends) *v->add_backends() = MakeBackend(b, 1);
  REQUIRE(AssignIds(st).ok());
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST_CASE("quic_lb is validated by the data plane's rule, naming the field", "[quic]") {
  const auto check = [](const v1::Vip& vip) {
    v1::Config c;
    *c.add_vips() = vip;
    return ValidateConfig(c, FieldPath::Index());
  };
  CHECK(check(QuicVip(2, 14, true, {})).ok());
  CHECK(check(QuicVip(3, 6, false, {})).ok());
  CHECK(Message(check(QuicVip(16, 4, false, {}))) ==
        "vips[0].quic_lb.server_id_len: 16 is out of range 1..15");
  // Wide values are not truncated before the rule sees them.
  CHECK(Message(check(QuicVip(257, 4, false, {}))) ==
        "vips[0].quic_lb.server_id_len: 257 is out of range 1..15");
  CHECK(Message(check(QuicVip(2, 3, false, {}))) == "vips[0].quic_lb.nonce_len: 3 is below 4");
  CHECK(Message(check(QuicVip(4, 16, false, {}))) ==
        "vips[0].quic_lb.nonce_len: server_id_len 4 + nonce_len 16 is over 19 (a connection ID "
        "holds 20 octets)");
  CHECK(Message(check(QuicVip(4, 8, true, {}))) ==
        "vips[0].quic_lb.encrypted: needs server_id_len + nonce_len = 16 (single-pass AES), not "
        "12: the four-pass form is not implemented in the data plane");
  v1::Vip tcp = QuicVip(2, 14, true, {});
  tcp.mutable_key()->set_protocol(v1::TCP);
  CHECK(Message(check(tcp)) == "vips[0].quic_lb: is for UDP VIPs only (QUIC runs over UDP)");
}

TEST_CASE("Server IDs: in config order, stable, retired and not reused within the grace",
          "[quic]") {
  CountingKeys keys;
  v1::State st = StateOf(QuicVip(2, 14, true, {"198.18.2.1", "198.18.2.2", "198.18.2.3"}));
  REQUIRE(UpdateQuicState(&st, nullptr, kT0, keys.source()).ok());
  CHECK(Ids(st) ==
        std::map<std::string, uint64_t>{{"198.18.2.1", 1}, {"198.18.2.2", 2}, {"198.18.2.3", 3}});
  REQUIRE(st.quic(0).configs_size() == 1);
  CHECK(st.quic(0).configs(0).config_id() == 0);
  CHECK(st.quic(0).configs(0).key() == "QUIC-SECRET-KEYA");
  CHECK(ValidateQuicState(st).ok());

  // Again, later: nothing moves, no key is drawn.
  const std::string before = st.SerializeAsString();
  REQUIRE(UpdateQuicState(&st, nullptr, kT0 + 1000, keys.source()).ok());
  CHECK(st.SerializeAsString() == before);

  // A backend leaves: its ID is retired, and the next backend does not get it.
  SetBackends(&st, {"198.18.2.1", "198.18.2.3"});
  REQUIRE(UpdateQuicState(&st, nullptr, kT0 + 2000, keys.source()).ok());
  REQUIRE(st.quic(0).retired_size() == 1);
  CHECK(st.quic(0).retired(0).server_id() == 2);
  CHECK(st.quic(0).retired(0).retired_unix_ms() == kT0 + 2000);
  SetBackends(&st, {"198.18.2.1", "198.18.2.3", "198.18.2.4"});
  REQUIRE(UpdateQuicState(&st, nullptr, kT0 + 3000, keys.source()).ok());
  CHECK(Ids(st)["198.18.2.4"] == 4);
  // The one that left comes back within the grace: its own ID again.
  SetBackends(&st, {"198.18.2.1", "198.18.2.2", "198.18.2.3", "198.18.2.4"});
  REQUIRE(UpdateQuicState(&st, nullptr, kT0 + 4000, keys.source()).ok());
  CHECK(Ids(st)["198.18.2.2"] == 2);
  CHECK(st.quic(0).retired_size() == 0);
  CHECK(ValidateQuicState(st).ok());

  // Each backend's ID in every live configuration, by its backend id.
  const QuicImage img = QuicImageOf(st, Key("198.18.0.20", 443, v1::UDP));
  REQUIRE(img.configs.size() == 1);
  CHECK(img.configs[0].key.has_value());
  REQUIRE(img.servers.size() == 4);
  CHECK(img.servers[0].sid == std::vector<uint8_t>{0, 1});
  CHECK(img.servers[0].backend_id ==
        BackendIdOf(st, Key("198.18.0.20", 443, v1::UDP), "198.18.2.1"));
}

TEST_CASE("Server IDs wrap within their length and skip retired ones until the grace ends",
          "[quic]") {
  CountingKeys keys;
  v1::State st = StateOf(QuicVip(1, 15, true, {"198.18.2.1", "198.18.2.2"}));
  REQUIRE(UpdateQuicState(&st, nullptr, kT0, keys.source()).ok());
  SetBackends(&st, {"198.18.2.2"});
  REQUIRE(UpdateQuicState(&st, nullptr, kT0, keys.source()).ok());  // 1 retired
  st.mutable_quic(0)->set_next_server_id(255);
  SetBackends(&st, {"198.18.2.2", "198.18.2.3", "198.18.2.4"});
  REQUIRE(UpdateQuicState(&st, nullptr, kT0 + 1000, keys.source()).ok());
  // 255, then past the end: 1 is retired, 2 in use: 3.
  CHECK(Ids(st) ==
        std::map<std::string, uint64_t>{{"198.18.2.2", 2}, {"198.18.2.3", 255}, {"198.18.2.4", 3}});
  // The grace is the drain timeout (300 s by default), at least 10 minutes.
  CHECK(QuicIdGraceMs(st.config().global()) == 600'000);
  st.mutable_quic(0)->set_next_server_id(255);
  SetBackends(&st, {"198.18.2.2", "198.18.2.3", "198.18.2.4", "198.18.2.5"});
  REQUIRE(UpdateQuicState(&st, nullptr, kT0 + 599'999, keys.source()).ok());
  CHECK(Ids(st)["198.18.2.5"] == 4);
  st.mutable_quic(0)->set_next_server_id(255);
  SetBackends(&st, {"198.18.2.2", "198.18.2.3", "198.18.2.4", "198.18.2.5", "198.18.2.6"});
  REQUIRE(UpdateQuicState(&st, nullptr, kT0 + 600'000, keys.source()).ok());
  CHECK(Ids(st)["198.18.2.6"] == 1);  // the grace is over
  CHECK(st.quic(0).retired_size() == 0);
}

TEST_CASE("Rotation: the next config ID and a new key beside the old; retired on request",
          "[quic]") {
  CountingKeys keys;
  v1::State st = StateOf(QuicVip(2, 14, true, {"198.18.2.1"}));
  REQUIRE(UpdateQuicState(&st, nullptr, kT0, keys.source()).ok());
  v1::QuicVipState* q = st.mutable_quic(0);
  REQUIRE(RotateQuic(q, st.config().vips(2).quic_lb(), kT0 + 1, keys.source()).ok());
  REQUIRE(q->configs_size() == 2);
  CHECK(q->configs(0).config_id() == 1);
  CHECK(q->configs(0).key() == "QUIC-SECRET-KEYB");
  CHECK(q->configs(1).config_id() == 0);
  const absl::Status again = RotateQuic(q, st.config().vips(2).quic_lb(), kT0 + 2, keys.source());
  CHECK(again.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(Message(again), Catch::Contains("config_id 0 is still live beside 1"));
  const QuicImage img = QuicImageOf(st, Key("198.18.0.20", 443, v1::UDP));
  CHECK(img.configs.size() == 2);
  CHECK(img.servers.size() == 2);  // the backend's ID in both
  auto retired = RetireQuicPrevious(q);
  REQUIRE(retired.ok());
  CHECK(*retired == 0);
  CHECK(RetireQuicPrevious(q).status().code() == absl::StatusCode::kFailedPrecondition);
  // Config IDs wrap after 6 (7 is "unroutable").
  for (int i = 0; i < 5; ++i) {
    REQUIRE(RotateQuic(q, st.config().vips(2).quic_lb(), kT0 + 3, keys.source()).ok());
    REQUIRE(RetireQuicPrevious(q).ok());
  }
  CHECK(q->configs(0).config_id() == 6);
  REQUIRE(RotateQuic(q, st.config().vips(2).quic_lb(), kT0 + 4, keys.source()).ok());
  CHECK(q->configs(0).config_id() == 0);

  // A changed quic_lb starts a new configuration the same way, each with
  // its own lengths; a server ID length too short for the IDs is refused.
  REQUIRE(RetireQuicPrevious(q).ok());
  st.mutable_config()->mutable_vips(2)->mutable_quic_lb()->set_server_id_len(3);
  st.mutable_config()->mutable_vips(2)->mutable_quic_lb()->set_nonce_len(6);
  st.mutable_config()->mutable_vips(2)->mutable_quic_lb()->set_encrypted(false);
  REQUIRE(UpdateQuicState(&st, nullptr, kT0 + 5, keys.source()).ok());
  REQUIRE(st.quic(0).configs_size() == 2);
  CHECK(st.quic(0).configs(0).server_id_len() == 3);
  CHECK(st.quic(0).configs(0).key().empty());
  CHECK(st.quic(0).configs(1).server_id_len() == 2);
  const QuicImage two = QuicImageOf(st, Key("198.18.0.20", 443, v1::UDP));
  REQUIRE(two.servers.size() == 2);
  CHECK(two.servers[0].sid.size() + two.servers[1].sid.size() == 5);
}

// An engine with a QUIC VIP over the fake data plane.
struct QuicRouter {
  explicit QuicRouter(TempDir* d) : dir(d) { Start(); }
  void Start() {
    e.reset();
    EngineOptions o;
    o.quic_key_source = keys.source();
    v1::Config c = SmallConfig();
    *c.add_vips() = QuicVip(2, 14, true, {"198.18.2.1", "198.18.2.2", "198.18.2.3"});
    e = StartEngine(*dir, &clock, c, o, &dp);
    REQUIRE(e != nullptr);
  }
  uint32_t VipId() const { return VipIdOf(e->State(), vip); }
  std::vector<dataplane::QuicServer> Servers() const {
    auto s = dp->GetQuicServers(VipId());
    REQUIRE(s.ok());
    return *s;
  }
  std::vector<dataplane::QuicConfig> Configs() const {
    auto s = dp->GetQuicConfigs(VipId());
    REQUIRE(s.ok());
    return *s;
  }
  TempDir* dir;
  CountingKeys keys;
  FakeClock clock{kT0, 5'000'000'000'000};
  dataplane::FakeDataplane* dp = nullptr;
  std::unique_ptr<RouterEngine> e;
  const v1::VipKey vip = Key("198.18.0.20", 443, v1::UDP);
};

TEST_CASE("The engine programs QUIC VIPs from the state, across changes and restarts", "[quic]") {
  TempDir dir;
  QuicRouter r(&dir);
  REQUIRE(r.Configs().size() == 1);
  CHECK(r.Configs()[0].key == QuicImageOf(r.e->State(), r.vip).configs[0].key);
  CHECK(r.Servers() == QuicImageOf(r.e->State(), r.vip).servers);
  CHECK(r.Servers().size() == 3);
  const auto ids = Ids(r.e->State());

  REQUIRE(r.e->AddBackend(r.vip, MakeBackend("198.18.2.4", 1), kOp).ok());
  CHECK(r.Servers().size() == 4);
  REQUIRE(r.e->DeleteBackend(r.vip, "198.18.2.2", kOp).ok());
  CHECK(r.Servers() == QuicImageOf(r.e->State(), r.vip).servers);
  CHECK(r.Servers().size() == 3);
  CHECK(r.e->State().quic(0).retired_size() == 1);
  // A change elsewhere keeps everything.
  REQUIRE(r.e->SetWeight(Key("198.18.0.10", 80), "198.18.1.3", 5, kOp).ok());
  const auto after = Ids(r.e->State());
  CHECK(after.at("198.18.2.1") == ids.at("198.18.2.1"));
  CHECK(after.at("198.18.2.3") == ids.at("198.18.2.3"));
  CHECK(after.at("198.18.2.4") == 4);

  // A restart reads the IDs and keys from the state: the same, nothing drawn.
  const v1::State was = r.e->State();
  r.Start();
  CHECK(r.e->State().quic(0).SerializeAsString() == was.quic(0).SerializeAsString());
  CHECK(r.Servers() == QuicImageOf(was, r.vip).servers);
  CHECK(r.Configs() == QuicImageOf(was, r.vip).configs);

  // Rotation: both configurations live, each backend in both; then retired.
  auto rot = r.e->RotateQuicConfig(r.vip, "quarterly", kOp);
  REQUIRE(rot.ok());
  CHECK(rot->config_id() == 1);
  CHECK(rot->previous_config_id() == 0);
  CHECK(r.Configs().size() == 2);
  CHECK(r.Servers().size() == 6);
  CHECK(r.e->RotateQuicConfig(r.vip, "", kOp).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  auto ret = r.e->RetireQuicConfig(r.vip, "", kOp);
  REQUIRE(ret.ok());
  CHECK(ret->previous_config_id() == 0);
  REQUIRE(r.Configs().size() == 1);
  CHECK(r.Configs()[0].config_id == 1);
  CHECK(r.Servers().size() == 3);
  CHECK(r.e->RotateQuicConfig(Key("198.18.0.10", 80), "", kOp).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(r.e->RotateQuicConfig(r.vip, std::string(201, 'x'), kOp).status().code() ==
        absl::StatusCode::kInvalidArgument);

  // Bad input changes nothing.
  const uint64_t gen = r.e->State().generation();
  v1::Config bad = r.e->GetConfig();
  bad.mutable_vips(2)->mutable_quic_lb()->set_server_id_len(0);
  const absl::Status s = r.e->ApplyConfig(bad, false, kOp).status();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Catch::Contains("quic_lb.server_id_len"));
  CHECK_THAT(Message(s), Catch::Contains("0 is out of range 1..15"));
  CHECK(r.e->State().generation() == gen);
}

TEST_CASE("Keys: exported to an admin, never in the audit log, the status or the image", "[quic]") {
  TempDir dir;
  QuicRouter r(&dir);
  REQUIRE(r.e->RotateQuicConfig(r.vip, "quarterly", kOp).ok());
  auto exp = r.e->ExportQuicConfig(r.vip, "198.18.2.3", kOp);
  REQUIRE(exp.ok());
  REQUIRE(exp->configs_size() == 2);
  CHECK(exp->configs(0).current());
  CHECK(exp->configs(0).config_id() == 1);
  CHECK(exp->configs(0).key() == "QUIC-SECRET-KEYB");
  CHECK(exp->configs(1).key() == "QUIC-SECRET-KEYA");
  CHECK(exp->configs(0).server_id() == std::string("\x00\x03", 2));
  CHECK(r.e->ExportQuicConfig(r.vip, "198.18.9.9", kOp).status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(r.e->ExportQuicConfig(Key("198.18.0.10", 80), "198.18.1.1", kOp).status().code() ==
        absl::StatusCode::kNotFound);

  auto status = r.e->GetStatus();
  REQUIRE(status.ok());
  const v1::VipStatus& vs = status->vips(2);
  REQUIRE(vs.quic_size() == 2);
  CHECK(vs.quic(0).encrypted());
  CHECK(vs.backends(2).quic_server_id() == "0003");

  r.e->FlushAudit();
  auto audit = r.e->QueryAudit(0, 0);
  REQUIRE(audit.ok());
  std::vector<std::string> actions;
  std::string text;
  for (const v1::AuditRecord& a : *audit) {
    actions.push_back(a.action());
    text += a.DebugString();
  }
  CHECK(std::count(actions.begin(), actions.end(), "rotate_quic_config") == 1);
  CHECK(std::count(actions.begin(), actions.end(), "export_quic_config") == 3);
  CHECK_THAT(text, Catch::Contains("quarterly"));
  const std::string hex = absl::BytesToHexString("QUIC-SECRET");
  for (const std::string& where : {text, status->DebugString(), DataplaneText(*r.e)}) {
    CHECK(where.find("QUIC-SECRET") == std::string::npos);
    CHECK(where.find(hex) == std::string::npos);
  }
  CHECK_THAT(DataplaneText(*r.e), Catch::Contains("quic config_id=1"));
}

}  // namespace
}  // namespace ballast::core
