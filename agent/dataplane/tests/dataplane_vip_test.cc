// A VIP's flags word in the maps (both copies the program reads: `vips`
// and vip_refs[id].meta): the owner deadline and the GUE flag, each left
// alone by the other's updates, also from another thread; and an address
// marker kept after its last VIP (a retired address). Needs root.
// (Split from dataplane_test.cc.)
#include <bpf/bpf.h>
#include <linux/bpf.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include "agent/dataplane/dataplane.h"
#include "agent/dataplane/tests/test_util.h"
#include "ballast_flow_hash.h"
#include "tests/lib/packet.h"
#include "tests/lib/xdp_run.h"

using namespace ballast::dataplane;
using namespace ballast::dataplane::testing;

TEST_CASE("owner deadline: set, read back, preserved by VIP updates, cleared",
          "[dataplane][bpf][owner]") {
  RequireRoot();
  auto dp = OpenUnpinned();
  auto key = ParseVipKey("198.18.0.10:80/tcp");
  REQUIRE(key.ok());
  CHECK(dp->SetVipOwnerDeadline(*key, 5).code() == absl::StatusCode::kNotFound);
  CHECK(dp->GetVipOwner(*key).status().code() == absl::StatusCode::kNotFound);

  REQUIRE(dp->UpsertVip(*key, 1).ok());
  auto owner = dp->GetVipOwner(*key);
  REQUIRE(owner.ok());
  CHECK_FALSE(owner->deadline_ns.has_value());
  CHECK(owner->fenced == 0);

  const uint64_t deadline = Dataplane::MonotonicNowNs() + 2'000'000'000ull;
  REQUIRE(dp->SetVipOwnerDeadline(*key, deadline).ok());
  auto [meta, ref] = VipMetas(*dp, *key, 1);
  CHECK(meta.flags == BALLAST_VIP_F_OWNED);
  CHECK(meta.owner_deadline_ns == deadline);
  CHECK(ref.flags == BALLAST_VIP_F_OWNED);
  CHECK(ref.owner_deadline_ns == deadline);
  CHECK(dp->GetVipOwner(*key)->deadline_ns == deadline);

  // Re-programming the VIP and swapping its table keep the deadline; so does
  // a new id; owner_deadline_if_new is ignored for an existing VIP.
  REQUIRE(dp->UpsertVip(*key, 1).ok());
  REQUIRE(dp->SetTable(1, std::vector<uint32_t>{1, 1, 1}).ok());
  REQUIRE(dp->UpsertVip(*key, 1, {.owner_deadline_if_new = 7}).ok());
  CHECK(dp->GetVipOwner(*key)->deadline_ns == deadline);
  REQUIRE(dp->UpsertVip(*key, 3).ok());
  std::tie(meta, ref) = VipMetas(*dp, *key, 3);
  CHECK(meta.owner_deadline_ns == deadline);
  CHECK(ref.owner_deadline_ns == deadline);
  CHECK(ref.flags == BALLAST_VIP_F_OWNED);

  // Earlier (revocation), then cleared: not owned, deadline zeroed.
  REQUIRE(dp->SetVipOwnerDeadline(*key, 0).ok());
  CHECK(dp->GetVipOwner(*key)->deadline_ns == 0u);
  REQUIRE(dp->SetVipOwnerDeadline(*key, std::nullopt).ok());
  std::tie(meta, ref) = VipMetas(*dp, *key, 3);
  CHECK(meta.flags == 0);
  CHECK(meta.owner_deadline_ns == 0);
  CHECK(ref.flags == 0);
  CHECK(ref.owner_deadline_ns == 0);
  CHECK(ref.vip_id == 3);
  CHECK_FALSE(dp->GetVipOwner(*key)->deadline_ns.has_value());

  // A new VIP may start owned (a standby: stopped until it holds the lease).
  auto key2 = ParseVipKey("[2001:db8::10]:443/tcp");
  REQUIRE(key2.ok());
  REQUIRE(dp->UpsertVip(*key2, 4, {.owner_deadline_if_new = 0}).ok());
  CHECK(dp->GetVipOwner(*key2)->deadline_ns == 0u);
  // Deleted and added again: a new VIP.
  REQUIRE(dp->DeleteVip(*key2).ok());
  REQUIRE(dp->UpsertVip(*key2, 4).ok());
  CHECK_FALSE(dp->GetVipOwner(*key2)->deadline_ns.has_value());
}

TEST_CASE("GUE: the flag in both copies of the VIP, the flows keep their shortcut; the port",
          "[dataplane][bpf]") {
  RequireRoot();
  auto dp = OpenUnpinned();
  auto key = ParseVipKey("198.18.0.10:80/tcp");
  REQUIRE(key.ok());
  REQUIRE(dp->UpsertVip(*key, 1, {.gue = true}).ok());
  auto [meta, ref] = VipMetas(*dp, *key, 1);
  CHECK(meta.flags == BALLAST_VIP_F_GUE);
  CHECK(ref.flags == BALLAST_VIP_F_GUE);
  const auto gen = [&] {
    ballast_vip_ref r = {};
    const uint32_t id = 1;
    REQUIRE(bpf_map_lookup_elem(dp->map_fd("vip_refs"), &id, &r) == 0);
    return r.gen;
  };
  const uint32_t gen0 = gen();
  CHECK(gen0 != 0);

  // Owned, then back to IP-in-IP: the flag goes, the ownership stays, and
  // the generation too (same key, same id: known flows keep the shortcut
  // and read the new mode on their next packet).
  const uint64_t deadline = Dataplane::MonotonicNowNs() + 2'000'000'000ull;
  REQUIRE(dp->SetVipOwnerDeadline(*key, deadline).ok());
  REQUIRE(dp->UpsertVip(*key, 1).ok());
  std::tie(meta, ref) = VipMetas(*dp, *key, 1);
  CHECK(meta.flags == BALLAST_VIP_F_OWNED);
  CHECK(ref.flags == BALLAST_VIP_F_OWNED);
  CHECK(meta.owner_deadline_ns == deadline);
  CHECK(ref.owner_deadline_ns == deadline);
  CHECK(gen() == gen0);
  REQUIRE(dp->UpsertVip(*key, 1, {.gue = true}).ok());
  std::tie(meta, ref) = VipMetas(*dp, *key, 1);
  CHECK(meta.flags == (BALLAST_VIP_F_OWNED | BALLAST_VIP_F_GUE));
  CHECK(ref.flags == (BALLAST_VIP_F_OWNED | BALLAST_VIP_F_GUE));
  CHECK(ref.owner_deadline_ns == deadline);
  CHECK(gen() == gen0);

  // The port in handshake_settings: 0 written as the default.
  Settings s;
  s.src4 = Ip("198.18.0.1");
  s.src6 = Ip("2001:db8::1");
  s.gue_port = 0;
  REQUIRE(dp->SetSettings(s).ok());
  ballast_handshake_settings hs = {};
  const uint32_t zero = 0;
  REQUIRE(bpf_map_lookup_elem(dp->map_fd("handshake_settings"), &zero, &hs) == 0);
  CHECK(hs.gue_port == BALLAST_GUE_PORT_DEFAULT);
  CHECK(hs.reserved16 == 0);
  CHECK(hs.adopted_bounce_ms == s.adopted_bounce_ms);
  s.gue_port = 7000;
  REQUIRE(dp->SetSettings(s).ok());
  REQUIRE(bpf_map_lookup_elem(dp->map_fd("handshake_settings"), &zero, &hs) == 0);
  CHECK(hs.gue_port == 7000);
  CHECK(dp->GetSettings()->gue_port == 7000);
  // A map written by a build before GUE holds 0: read as the default.
  hs.gue_port = 0;
  REQUIRE(bpf_map_update_elem(dp->map_fd("handshake_settings"), &zero, &hs, BPF_ANY) == 0);
  CHECK(dp->GetSettings()->gue_port == BALLAST_GUE_PORT_DEFAULT);
}

TEST_CASE("owner deadline renewals from another thread are never undone by VIP updates",
          "[dataplane][bpf][owner]") {
  RequireRoot();
  auto dp = OpenUnpinned();
  auto key = ParseVipKey("198.18.0.10:80/tcp");
  REQUIRE(key.ok());
  REQUIRE(dp->UpsertVip(*key, 1).ok());
  REQUIRE(dp->SetVipOwnerDeadline(*key, 1).ok());
  constexpr uint64_t kRenewals = 400;
  std::atomic<bool> failed{false};
  std::thread renewer([&] {
    for (uint64_t d = 2; d <= kRenewals; ++d) {
      if (!dp->SetVipOwnerDeadline(*key, d).ok()) failed = true;
    }
  });
  // The reconciler re-programs the VIP meanwhile (also moving its id).
  for (int i = 0; i < 200; ++i) {
    if (!dp->UpsertVip(*key, 1 + static_cast<uint32_t>(i % 2)).ok()) failed = true;
  }
  renewer.join();
  CHECK_FALSE(failed);
  auto owner = dp->GetVipOwner(*key);
  REQUIRE(owner.ok());
  CHECK(owner->deadline_ns == kRenewals);
  auto vips = dp->Vips();
  REQUIRE(vips.ok());
  REQUIRE(vips->size() == 1);
  auto [meta, ref] = VipMetas(*dp, *key, (*vips)[0].meta.vip_id);
  CHECK(meta.owner_deadline_ns == kRenewals);
  CHECK(ref.owner_deadline_ns == kRenewals);
}

namespace {

// The vip_filter bit of an address (as the library computes it).
uint32_t FilterBit(const ballast::IpAddress& a) {
  uint32_t w[4];
  std::memcpy(w, a.bytes().data(), sizeof(w));
  return ballast_vip_filter_bit(w[0], w[1], w[2], w[3], a.family());
}

// One TCP SYN from a client to `dst`:`port` through the lb program: its
// action and the verdict counter that moved ("XDP_DROP drop_vip_unserved").
std::string Syn(Dataplane& dp, const char* dst, uint16_t port) {
  using namespace ballast::pktgen;
  const Bytes frame = PacketBuilder()
                          .Eth(Mac::Parse("02:00:00:00:00:01"), Mac::Parse("02:00:00:00:00:02"))
                          .Ip4(Addr::Parse("198.18.2.2"), Addr::Parse(dst))
                          .Tcp(40000, port, tcp::kSyn)
                          .Build();
  auto before = dp.Verdicts();
  REQUIRE(before.ok());
  auto r = RunXdp(dp.prog_fd(), frame);
  REQUIRE(r.ok());
  auto after = dp.Verdicts();
  REQUIRE(after.ok());
  std::string out = XdpActionName(r->action);
  for (int v = 0; v < BALLAST_V_MAX; ++v) {
    if ((*after)[v] != (*before)[v]) {
      out += " " + std::string(VerdictName(static_cast<ballast_verdict>(v)));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("a marker kept after the address's last VIP: its packets are dropped until it goes",
          "[dataplane][bpf][retire]") {
  RequireRoot();
  auto dp = OpenUnpinned();
  // Two addresses whose filter bits share a word, so that deleting one
  // rewrites the word the other's bit is in.
  const ballast::IpAddress a = Ip("198.18.0.10");
  std::string b_text;
  for (int i = 11; i < 65536 && b_text.empty(); ++i) {
    const std::string t = "198.18." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    const uint32_t bit = FilterBit(*ballast::IpAddress::Parse(t));
    if (bit / 64 == FilterBit(a) / 64 && bit != FilterBit(a)) b_text = t;
  }
  REQUIRE(!b_text.empty());
  INFO("second address " << b_text);
  auto ka = ParseVipKey("198.18.0.10:80/tcp");
  auto kb = ParseVipKey(b_text + ":80/tcp");
  REQUIRE((ka.ok() && kb.ok()));
  REQUIRE(dp->UpsertVip(*ka, 1).ok());
  REQUIRE(dp->UpsertVip(*kb, 2).ok());
  const std::string kDropped = "XDP_DROP drop_vip_unserved";
  // A port no VIP serves: dropped, never passed to the kernel.
  CHECK(Syn(*dp, "198.18.0.10", 81) == kDropped);

  // The address's last VIP goes, its marker stays: the VIP's own port is
  // unserved now, dropped too.
  REQUIRE(dp->DeleteVip(*ka, {.keep_address_marker = true}).ok());
  auto markers = dp->VipAddressMarkers();
  REQUIRE(markers.ok());
  CHECK(std::count(markers->begin(), markers->end(), a) == 1);
  CHECK(Syn(*dp, "198.18.0.10", 80) == kDropped);
  // The neighbour's deletion rewrites the shared filter word: the kept
  // marker's bit stays in it.
  REQUIRE(dp->DeleteVip(*kb).ok());
  CHECK(Syn(*dp, "198.18.0.10", 80) == kDropped);
  CHECK(Syn(*dp, b_text.c_str(), 80) == "XDP_PASS pass_not_vip");

  // Released: the address is nobody's, its packets are the kernel's; the
  // word is empty again.
  REQUIRE(dp->DeleteVipAddressMarker(a).ok());
  CHECK(Syn(*dp, "198.18.0.10", 80) == "XDP_PASS pass_not_vip");
  uint64_t word = 1;
  const uint32_t w = FilterBit(a) / 64;
  REQUIRE(bpf_map_lookup_elem(dp->map_fd("vip_filter"), &w, &word) == 0);
  CHECK(word == 0);
}
