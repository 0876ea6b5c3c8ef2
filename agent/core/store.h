// Where the agent's v1::State lives: one interface, two implementations.
//
//   FileStore (file_store.h)   standalone: the local state file is the state.
//   coord::EtcdStore           cluster: one etcd key holds the state of every
//                              node; the local file is only a cache.
//
// The interface lives here, beside the engine that uses it; the cluster
// adapter implements it (core depends on no adapter).
//
// The engine (agent/core/router_engine.h) reads the state once at start
// (Load) and writes every change through Save, passing the revision its
// current state came from, so a store shared by several writers can refuse a
// change built on a stale state (compare-and-swap) instead of losing the
// other writer's update.
//
// Thread-safety: the engine serializes Load/Save/Adopted; implementations
// may be read from other threads only where they say so.
#ifndef BALLAST_AGENT_CORE_STORE_H_
#define BALLAST_AGENT_CORE_STORE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::core {

// Who writes: an operator's request (lbctl) or the agent's own automated
// decision (health marks, drain-deadline evictions). A clustered store lets
// only the leader write automated decisions, fenced (etcd/fence.h).
enum class WriteKind { kOperator, kAutomation };

struct StoredState {
  v1::State state;
  // The store's version of this state (etcd: the key's mod_revision; a file:
  // 0). Passed back to Save as base_revision.
  int64_t revision = 0;
  // Where it came from, for logs ("etcd", "cache", "file").
  std::string source;
};

class Store {
 public:
  virtual ~Store() = default;

  // For logs and errors, e.g. "state file /var/lib/ballast/state.pb".
  virtual std::string Describe() const = 0;

  // The stored state. NotFound: nothing stored yet (first start: the
  // engine initialises it from the config's `initial` and Saves it with
  // base_revision 0). DataLoss: what is stored is corrupt or was tampered
  // with (the agent refuses to start). Other codes: I/O.
  virtual absl::StatusOr<StoredState> Load() = 0;

  // Replaces the state stored at `base_revision` with `next`; returns the
  // new revision.
  //   ABORTED: the store holds a newer state than base_revision (another
  //     writer won): nothing was written; Load() and retry.
  //   FAILED_PRECONDITION: this writer may not write this kind now (not the
  //     leader; fenced: a newer leader exists, etcd::IsFenced()).
  //   UNAVAILABLE: the store cannot be reached; nothing may have changed or
  //     the outcome is unknown (the message says which).
  virtual absl::StatusOr<int64_t> Save(const v1::State& next, int64_t base_revision,
                                       WriteKind kind) = 0;

  // The engine now runs `state` at `revision` (read from the store by a
  // watch rather than written by it). A cache may record it.
  virtual void Adopted(const v1::State& state, int64_t revision) {
    (void)state;
    (void)revision;
  }
};

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_STORE_H_
