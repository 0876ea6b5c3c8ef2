// RouterEngine::ListFlows over the in-memory data plane: a VIP's live flows
// (`lbctl flows`), filtered by backend, limited, with expired entries and
// other VIPs' flows left out.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>

#include "agent/core/router_engine.h"
#include "agent/core/tests/test_util.h"
#include "agent/dataplane/fake_dataplane.h"

namespace ballast::core {
namespace {

using testing::TempDir;

TEST_CASE("ListFlows: a VIP's live flows, by backend, limited; unknown names are not found") {
  TempDir dir;
  FakeClock clock(1'700'000'000'000, 5'000'000'000'000);
  EngineOptions eo;
  eo.state_file = dir.File("state.pb");
  eo.audit_log = dir.File("audit.jsonl");
  auto owned = std::make_unique<dataplane::FakeDataplane>();
  dataplane::FakeDataplane& dp = *owned;
  auto e = RouterEngine::Start(std::move(owned), eo, &clock, testing::SmallConfig());
  REQUIRE(e.ok());
  auto st = (*e)->GetStatus();
  REQUIRE(st.ok());
  const uint32_t b1 = st->vips(0).backends(0).backend_id();  // 198.18.1.1
  const uint32_t b2 = st->vips(0).backends(1).backend_id();  // 198.18.1.2

  const uint64_t now_ns = clock.NowMonotonicNs();
  auto add = [&](const char* map, uint32_t vip, uint16_t dport, uint16_t sport, uint32_t backend,
                 uint8_t state, uint64_t last_seen_ns) {
    ballast_flow_key k = {};
    const uint32_t client = htonl(0xc6120105u);  // 198.18.1.5
    std::memcpy(k.src, &client, 4);
    const uint32_t v = htonl(vip);
    std::memcpy(k.dst, &v, 4);
    k.sport = htons(sport);
    k.dport = htons(dport);
    k.proto = IPPROTO_TCP;
    k.family = BALLAST_FAMILY_V4;
    ballast_flow f = {};
    f.backend_id = backend;
    f.state = state;
    f.last_seen_ns = last_seen_ns;
    REQUIRE(dp.AddFlow(map, k, f).ok());
  };
  const uint32_t vip = 0xc612000au;  // 198.18.0.10
  add("flows", vip, 80, 40002, b2, BALLAST_FLOW_ESTABLISHED, now_ns - 2'000'000'000);
  add("flows", vip, 80, 40001, b1, BALLAST_FLOW_ESTABLISHED, now_ns);
  add("adopted_flows", vip, 80, 40003, b1, BALLAST_FLOW_CLOSING, now_ns);
  add("flows", vip, 80, 40004, b1, BALLAST_FLOW_ESTABLISHED, 0);               // expired
  add("flows", vip, 81, 40005, b1, BALLAST_FLOW_ESTABLISHED, now_ns);          // another port
  add("flows", 0xc612000bu, 80, 40006, b1, BALLAST_FLOW_ESTABLISHED, now_ns);  // another VIP

  v1::ListFlowsRequest req;
  *req.mutable_vip() = testing::Key("198.18.0.10", 80);
  auto r = (*e)->ListFlows(req);
  REQUIRE(r.ok());
  CHECK(r->matched() == 3);
  CHECK(r->scanned() == 6);
  CHECK_FALSE(r->partial());
  REQUIRE(r->flows_size() == 3);
  // Ordered by client and port.
  CHECK(r->flows(0).client() == "198.18.1.5");
  CHECK(r->flows(0).client_port() == 40001);
  CHECK(r->flows(0).vip_port() == 80);
  CHECK(r->flows(0).backend() == "198.18.1.1");
  CHECK(r->flows(0).state() == "established");
  CHECK(r->flows(0).table() == "flows");
  CHECK(r->flows(0).idle_ms() == 0);
  CHECK(r->flows(1).client_port() == 40002);
  CHECK(r->flows(1).backend() == "198.18.1.2");
  CHECK(r->flows(1).idle_ms() == 2000);
  CHECK(r->flows(1).expires_in_ms() + 2000 == dataplane::Settings{}.tcp_idle_ns / 1000000);
  CHECK(r->flows(2).client_port() == 40003);
  CHECK(r->flows(2).state() == "closing");
  CHECK(r->flows(2).table() == "adopted_flows");

  // One backend; a limit.
  req.set_backend("198.18.1.1");
  r = (*e)->ListFlows(req);
  REQUIRE(r.ok());
  CHECK(r->matched() == 2);
  req.clear_backend();
  req.set_limit(1);
  r = (*e)->ListFlows(req);
  REQUIRE(r.ok());
  CHECK(r->flows_size() == 1);
  CHECK(r->matched() == 3);

  // Refusals.
  req.set_limit(100001);
  CHECK((*e)->ListFlows(req).status().code() == absl::StatusCode::kInvalidArgument);
  req.set_limit(0);
  req.set_backend("198.18.1.9");
  auto nf = (*e)->ListFlows(req);
  CHECK(nf.status().code() == absl::StatusCode::kNotFound);
  CHECK(nf.status().message() == "backend 198.18.1.9 of vip 198.18.0.10:80/tcp does not exist");
  req.clear_backend();
  *req.mutable_vip() = testing::Key("198.18.0.99", 80);
  CHECK((*e)->ListFlows(req).status().code() == absl::StatusCode::kNotFound);
  req.mutable_vip()->set_address("not-an-address");
  CHECK((*e)->ListFlows(req).status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ballast::core
