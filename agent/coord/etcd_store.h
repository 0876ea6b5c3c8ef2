// The cluster store: the whole v1::State is one etcd key, `<prefix>/state`
// (deterministic protobuf binary). Every write is a transaction that compares
// the key's mod_revision with the revision the writer's state came from, so
// two operators on two nodes cannot lose each other's update (the loser gets
// ABORTED, and the engine re-reads and retries). Automated decisions
// (WriteKind::kAutomation) are written only with the leader's fence
// (etcd::FencedTxn): a stale leader's write is rejected by etcd itself.
//
// The cache. Every state read from or written to etcd is also written to
// `cache_file` (protobuf text of v1::StateCache: revision, SHA-256 of the
// state's deterministic encoding, the state). Load() reads etcd; only when
// etcd cannot be reached does it fall back to the cache, and a cache whose
// hash does not match its content (it was edited) is refused with DataLoss:
// a hand-edited file never becomes effective config. When etcd is reachable
// etcd always wins.
//
// Thread-safety: Load/Save/Adopted are called by the engine (serialized);
// SetFence and loaded_from_cache may be called from any thread.
#ifndef BALLAST_AGENT_COORD_ETCD_STORE_H_
#define BALLAST_AGENT_COORD_ETCD_STORE_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "agent/core/store.h"
#include "agent/etcd/client.h"
#include "agent/etcd/fence.h"

namespace ballast::coord {

// The store interface is core's (agent/core/store.h); this is its adapter.
using core::Store;
using core::StoredState;
using core::WriteKind;

struct EtcdStoreOptions {
  std::string prefix = "/ballast";
  std::string cache_file;  // required
  // Called (on the writer's thread) when a fenced write was rejected: this
  // node is no longer the leader.
  std::function<void(const absl::Status&)> on_fenced;
  // The largest state written. etcd refuses a request over its
  // --max-request-bytes (1.5 MiB by default) with a bare "request is too
  // large"; the write carries the state, its compares and the fence, so the
  // default leaves 64 KiB for those.
  size_t max_state_bytes = 1572864 - 65536;
};

class EtcdStore final : public Store {
 public:
  EtcdStore(etcd::Client& client, EtcdStoreOptions options);

  std::string Describe() const override;
  absl::StatusOr<StoredState> Load() override;
  absl::StatusOr<int64_t> Save(const v1::State& next, int64_t base_revision,
                               WriteKind kind) override;
  void Adopted(const v1::State& state, int64_t revision) override;

  // The leader's fence (nullopt: not the leader; automated writes are
  // refused).
  void SetFence(std::optional<etcd::Fence> fence);
  std::optional<etcd::Fence> fence() const;
  std::string state_key() const { return options_.prefix + "/state"; }

  // The cache file's state, verified (DataLoss when edited or corrupt,
  // NotFound when absent).
  static absl::StatusOr<StoredState> ReadCache(const std::string& path);
  static absl::Status WriteCache(const std::string& path, const v1::State& state, int64_t revision);

 private:
  void Cache(const v1::State& state, int64_t revision);

  etcd::Client& client_;
  const EtcdStoreOptions options_;
  mutable std::mutex mu_;
  std::optional<etcd::Fence> fence_;
};

// True for errors that mean "etcd could not be reached" (as opposed to a
// refusal): UNAVAILABLE and DEADLINE_EXCEEDED.
bool IsUnreachable(const absl::Status& s);

}  // namespace ballast::coord

#endif  // BALLAST_AGENT_COORD_ETCD_STORE_H_
