// bench_agent: how fast a weight change reaches the data plane, measured
// against a running lbagent (see tools/bench/agent_bench.sh, which starts
// one with 100 VIPs x 100 backends).
//
// For each of N changes: SetWeight over the admin API (gRPC on the unix
// socket), then read the VIP's Maglev table back from the pinned map until
// it equals the table the new weights must give (BuildTable of the state's
// ids, addresses and effective weights). Reports, over the N changes:
//   call      SetWeight sent -> returned (validate, persist with fsync,
//             build the table, swap it in, audit with fdatasync)
//   to_live   SetWeight returned -> the new table read back from the map
//   live_at_return   changes whose very first read-back was already new
//
// With --fill-flows N it first writes N live ESTABLISHED flows (on the
// VIP's backends) into the pinned `flows` map, so that every status read
// and /metrics scrape scans a full connection table.
//
//   bench_agent --socket PATH --pin-dir DIR [--changes 100] [--vip N] [--fill-flows N]
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/dataplane/dataplane.h"
#include "agent/maglev/maglev.h"
#include "ballast/v1/api.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()));
  return v[i];
}

int Usage() {
  fprintf(stderr,
          "usage: bench_agent --socket PATH --pin-dir DIR [--changes N] [--vip INDEX] "
          "[--fill-flows N]\n");
  return 2;
}

}  // namespace

// Writes `n` live ESTABLISHED flows from clients 198.19.x.y, spread over the
// backends of `in`, into `flows` (batches of 65,536).
absl::Status FillFlows(const ballast::dataplane::Dataplane& dp,
                       const std::vector<ballast::maglev::Backend>& in, uint32_t n) {
  constexpr uint32_t kBatch = 65536;
  const uint64_t now = ballast::dataplane::Dataplane::MonotonicNowNs();
  std::vector<ballast_flow_key> keys(kBatch);
  std::vector<ballast_flow> values(kBatch);
  for (uint32_t done = 0; done < n;) {
    const uint32_t count = std::min(kBatch, n - done);
    for (uint32_t j = 0; j < count; ++j) {
      const uint32_t i = done + j;
      ballast_flow_key& k = keys[j];
      k = {};
      const uint32_t client = htonl(0xc6130000u + i / 60000);  // 198.19.x.y
      std::memcpy(k.src, &client, 4);
      const uint32_t vip = htonl(0xc612000au);  // a VIP-looking destination
      std::memcpy(k.dst, &vip, 4);
      k.sport = htons(static_cast<uint16_t>(1024 + i % 60000));
      k.dport = htons(80);
      k.proto = IPPROTO_TCP;
      k.family = BALLAST_FAMILY_V4;
      values[j] = {};
      values[j].backend_id = in[i % in.size()].id;
      values[j].state = BALLAST_FLOW_ESTABLISHED;
      values[j].last_seen_ns = now;
    }
    uint32_t written = count;
    if (bpf_map_update_batch(dp.map_fd("flows"), keys.data(), values.data(), &written, nullptr) !=
        0) {
      return absl::ErrnoToStatus(errno, "bpf_map_update_batch(flows)");
    }
    done += count;
  }
  return absl::OkStatus();
}

int main(int argc, char** argv) {
  std::string socket;
  std::string pin_dir;
  int changes = 100;
  int vip_index = 0;
  uint32_t fill_flows = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Usage();
    if (a == "--socket") {
      socket = argv[++i];
    } else if (a == "--pin-dir") {
      pin_dir = argv[++i];
    } else if (a == "--changes") {
      changes = atoi(argv[++i]);
    } else if (a == "--vip") {
      vip_index = atoi(argv[++i]);
    } else if (a == "--fill-flows") {
      fill_flows = static_cast<uint32_t>(strtoul(argv[++i], nullptr, 10));
    } else {
      return Usage();
    }
  }
  if (socket.empty() || pin_dir.empty() || changes <= 0) return Usage();

  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto status_stub = ballast::v1::Status::NewStub(channel);
  auto backends_stub = ballast::v1::Backends::NewStub(channel);
  ballast::v1::StatusResponse st;
  {
    grpc::ClientContext ctx;
    grpc::Status s = status_stub->GetStatus(&ctx, ballast::v1::StatusRequest(), &st);
    if (!s.ok()) {
      fprintf(stderr, "GetStatus: %s\n", s.error_message().c_str());
      return 1;
    }
  }
  if (vip_index >= st.vips_size()) {
    fprintf(stderr, "the agent has %d VIPs\n", st.vips_size());
    return 1;
  }
  const ballast::v1::VipStatus& vip = st.vips(vip_index);
  std::vector<ballast::maglev::Backend> in;
  for (const auto& b : vip.backends()) {
    in.push_back({b.backend_id(), b.address(), b.effective_weight()});
  }
  if (in.size() < 2) {
    fprintf(stderr, "the VIP needs at least 2 backends\n");
    return 1;
  }
  auto dp = ballast::dataplane::Dataplane::OpenPinned(pin_dir);
  if (!dp.ok()) {
    fprintf(stderr, "%s\n", std::string(dp.status().message()).c_str());
    return 1;
  }

  if (fill_flows > 0) {
    if (auto n = FillFlows(**dp, in, fill_flows); !n.ok()) {
      fprintf(stderr, "filling the flow table: %s\n", std::string(n.message()).c_str());
      return 1;
    }
    printf("flows written: %u\n", fill_flows);
  }

  std::vector<double> call_us;
  std::vector<double> live_us;
  int live_at_return = 0;
  for (int i = 0; i < changes; ++i) {
    auto& b = in[static_cast<size_t>(i) % in.size()];
    const uint32_t w = b.weight == 3 ? 1 : 3;
    b.weight = w;
    auto want = ballast::maglev::BuildTable(in, vip.table_size());
    if (!want.ok()) {
      fprintf(stderr, "%s\n", std::string(want.status().message()).c_str());
      return 1;
    }
    ballast::v1::SetWeightRequest req;
    *req.mutable_vip() = vip.key();
    req.set_address(b.key);
    req.set_weight(w);
    ballast::v1::Empty resp;
    grpc::ClientContext ctx;
    const auto t0 = Clock::now();
    grpc::Status s = backends_stub->SetWeight(&ctx, req, &resp);
    const auto t1 = Clock::now();
    if (!s.ok()) {
      fprintf(stderr, "SetWeight: %s\n", s.error_message().c_str());
      return 1;
    }
    bool first = true;
    while (true) {
      auto got = (*dp)->GetTable(vip.vip_id());
      if (got.ok() && *got == *want) break;
      first = false;
      if (Clock::now() - t1 > std::chrono::seconds(2)) {
        fprintf(stderr, "change %d: the table did not become the expected one within 2 s\n", i);
        return 1;
      }
    }
    const auto t2 = Clock::now();
    call_us.push_back(Us(t1 - t0));
    live_us.push_back(Us(t2 - t1));
    live_at_return += first ? 1 : 0;
  }
  printf("changes %d on a VIP of %zu backends, table size %u\n", changes, in.size(),
         vip.table_size());
  printf("call      p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", Pct(call_us, 50) / 1000,
         Pct(call_us, 99) / 1000, Pct(call_us, 100) / 1000);
  printf("to_live   p50 %.3f ms  p99 %.3f ms  max %.3f ms (includes reading the %u slots back)\n",
         Pct(live_us, 50) / 1000, Pct(live_us, 99) / 1000, Pct(live_us, 100) / 1000,
         vip.table_size());
  printf("live_at_return %d/%d\n", live_at_return, changes);
  return live_at_return == changes ? 0 : 1;
}
