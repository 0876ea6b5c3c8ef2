// Shared helpers of core_tests: configs to start from, temporary
// directories, and engines over the in-memory or the real data plane.
#ifndef BALLAST_AGENT_CORE_TESTS_TEST_UTIL_H_
#define BALLAST_AGENT_CORE_TESTS_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/core/clock.h"
#include "agent/core/router_engine.h"
#include "agent/dataplane/fake_dataplane.h"
#include "ballast/v1/config.pb.h"

namespace ballast::core::testing {

// A fresh directory under /tmp, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

v1::VipKey Key(const std::string& addr, uint32_t port, v1::Protocol proto = v1::TCP);
v1::Backend MakeBackend(const std::string& addr, uint32_t weight);

// Two VIPs: 198.18.0.10:80/tcp with 198.18.1.1..3 (weights 1,1,2) and
// [2001:db8:10::10]:443/tcp with 2001:db8:1::1..2 (weights 1,1); table size
// 251; sources set; no interface.
v1::Config SmallConfig();

// `vips` IPv4 VIPs 198.18.<i/250>.<i%250+1>:80/tcp with `backends` backends
// each (198.19.x.y), weight 1, table size `table_size`.
v1::Config BigConfig(int vips, int backends, uint32_t table_size);

// Fails the current test (with the reason) unless running as root.
void RequireRoot();

// An engine over an in-memory data plane (dataplane/fake_dataplane.h), state
// and audit log in `dir`; `vip_ownership` as EngineOptions (cluster mode's
// ACTIVE_STANDBY handling). `fake`, if given, receives the data plane (owned
// by the engine) for its test hooks. No root needed.
std::unique_ptr<RouterEngine> StartEngine(const TempDir& dir, const Clock* clock,
                                          const v1::Config& initial, bool vip_ownership = false,
                                          dataplane::FakeDataplane** fake = nullptr);

// The same with `options` (state_file and audit_log set to files in `dir`,
// the rest as given).
std::unique_ptr<RouterEngine> StartEngine(const TempDir& dir, const Clock* clock,
                                          const v1::Config& initial, EngineOptions options,
                                          dataplane::FakeDataplane** fake = nullptr);

// A disk whose syncs can be stalled: while Stall() is in force, each sync
// (AuditLog::Syncer, fdatasync underneath) blocks until Release() or until
// it has blocked `max`. Outlives the log it is given to (the syncer shares
// its state).
class SlowDisk {
 public:
  explicit SlowDisk(std::chrono::milliseconds max = std::chrono::seconds(5));
  ~SlowDisk() { Release(); }
  AuditLog::Syncer syncer() const;
  void Stall();
  void Release();
  // True once a sync is blocked (waits up to `timeout` for one).
  bool WaitBlocked(std::chrono::milliseconds timeout) const;
  int syncs() const;  // syncs that reached the disk

 private:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool stalled = false;
    int blocked = 0;
    int syncs = 0;
  };
  std::chrono::milliseconds max_;
  std::shared_ptr<Shared> s_ = std::make_shared<Shared>();
};

// The state store of a commit that stalls (a slow disk under the state
// file, or a slow etcd): while Stall() is in force, each Save blocks until
// Release() or for 5 s, holding the engine's lock as a commit does; then
// the file store underneath does the work.
class SlowStore final : public Store {
 public:
  explicit SlowStore(std::string path);
  std::string Describe() const override;
  absl::StatusOr<StoredState> Load() override;
  absl::StatusOr<int64_t> Save(const v1::State& next, int64_t base, WriteKind kind) override;
  void Stall();
  void Release();
  // True once a Save is blocked (waits up to `timeout` for one).
  bool WaitBlocked(std::chrono::milliseconds timeout);

 private:
  std::unique_ptr<Store> file_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stalled_ = false;
  bool blocked_ = false;
};

// The same over the real data plane (BPF maps; root), unpinned unless
// `pin_dir` is given.
std::unique_ptr<RouterEngine> StartRealEngine(const TempDir& dir, const Clock* clock,
                                              const v1::Config& initial,
                                              const std::string& pin_dir = "");

// What the engine's data plane holds, as DescribeImage text.
std::string DataplaneText(const RouterEngine& e);
// What the maps hold equals the full image of the engine's state: the
// scoped (incremental) updates of a mutation end where a full rebuild would.
void RequireDataplaneMatchesState(const RouterEngine& e);
// The table the data plane holds for `vip` equals BuildTable of the state's
// effective weights.
void RequireTableMatchesState(const RouterEngine& e, const v1::VipKey& vip);

// Deterministic serialization of a state (for before/after comparisons).
std::string Serialized(const v1::State& state);

}  // namespace ballast::core::testing

#endif  // BALLAST_AGENT_CORE_TESTS_TEST_UTIL_H_
