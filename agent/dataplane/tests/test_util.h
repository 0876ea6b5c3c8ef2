// Shared by the data-plane library's tests (agent/dataplane/tests): root
// check, a private bpffs, a test network namespace with a veth pair, and
// small readers. Cleanup is RAII (it runs when a REQUIRE fails).
#ifndef BALLAST_AGENT_DATAPLANE_TESTS_TEST_UTIL_H_
#define BALLAST_AGENT_DATAPLANE_TESTS_TEST_UTIL_H_

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "agent/dataplane/bpf_util.h"
#include "agent/dataplane/dataplane.h"
#include "agent/base/ip_address.h"
#include "agent/dataplane/xdp_attach.h"
#include "tests/lib/netns.h"

namespace ballast::dataplane::testing {

using ballast::IpAddress;

inline void RequireRoot() {
  if (geteuid() != 0) {
    FAIL("this test loads BPF programs and creates network namespaces: run it as root");
  }
}

using ballast::pktgen::RunCommand;
inline const auto& Run = RunCommand;

// A private bpf filesystem mounted on a temporary directory.
class TempBpffs {
 public:
  TempBpffs() {
    char tmpl[] = "/tmp/ballast-dpt-bpffs-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    if (mount("bpf", dir_.c_str(), "bpf", 0, "mode=0700") != 0) {
      const std::string err = strerror(errno);
      rmdir(dir_.c_str());
      FAIL("mounting a bpffs on " << dir_ << ": " << err);
    }
  }
  ~TempBpffs() {
    umount2(dir_.c_str(), MNT_DETACH);
    rmdir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// A network namespace with veth pair dpt0 <-> dpt1 (both up). While alive,
// the test thread is inside the namespace.
class TestNetns {
 public:
  TestNetns() {
    const std::string name = "ballast-dpt-" + std::to_string(getpid());
    const std::string n = "ip -n " + name + " ";
    auto ns = ballast::pktgen::ScopedNetns::Create(
        name, {n + "link add name dpt0 type veth peer name dpt1", n + "link set dev dpt0 up",
               n + "link set dev dpt1 up"});
    INFO(ns.status().ToString());
    REQUIRE(ns.ok());
    ns_ = std::move(*ns);
  }

 private:
  std::unique_ptr<ballast::pktgen::ScopedNetns> ns_;
};

inline uint32_t MapId(int fd) {
  auto info = GetMapInfo(fd);
  REQUIRE(info.ok());
  return info->id;
}

inline uint32_t ProgId(int fd) {
  auto info = GetProgInfo(fd);
  REQUIRE(info.ok());
  return info->id;
}

inline uint32_t AttachedId(const char* dev) {
  auto idx = IfIndex(dev);
  REQUIRE(idx.ok());
  auto st = QueryXdp(*idx);
  REQUIRE(st.ok());
  return st->prog_id;
}

inline const char* const kMaps[] = {"vips",          "vip_refs",  "vip_filter",    "backends",
                                    "maglev_tables", "flows",     "adopted_flows", "flows_udp",
                                    "handshakes",    "settings",  "icmp_budget",   "nexthops",
                                    "backend_stats", "vip_stats", "verdicts",      "clock_cache"};

inline std::unique_ptr<Dataplane> OpenUnpinned(uint32_t flow_capacity = 4096) {
  Options o;
  o.pin_dir = "";
  o.flow_capacity = flow_capacity;
  auto dp = Dataplane::Open(o);
  INFO(dp.status().ToString());
  REQUIRE(dp.ok());
  return std::move(*dp);
}

inline IpAddress Ip(const char* s) {
  auto a = IpAddress::Parse(s);
  INFO(s);
  REQUIRE(a.ok());
  return *a;
}

// Both copies of a VIP's value the program reads: `vips` (new flows) and
// vip_refs[id].meta (known flows).
inline std::pair<ballast_vip_meta, ballast_vip_meta> VipMetas(const Dataplane& dp,
                                                              const VipKey& key, uint32_t vip_id) {
  ballast_vip_key raw = {};
  std::memcpy(raw.addr, key.addr.bytes().data(), sizeof(raw.addr));
  raw.port = htons(key.port);
  raw.proto = key.proto;
  raw.family = key.addr.family();
  ballast_vip_meta meta = {};
  REQUIRE(bpf_map_lookup_elem(dp.map_fd("vips"), &raw, &meta) == 0);
  ballast_vip_ref ref = {};
  REQUIRE(bpf_map_lookup_elem(dp.map_fd("vip_refs"), &vip_id, &ref) == 0);
  return {meta, ref.meta};
}

}  // namespace ballast::dataplane::testing

#endif  // BALLAST_AGENT_DATAPLANE_TESTS_TEST_UTIL_H_
