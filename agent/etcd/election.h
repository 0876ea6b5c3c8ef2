// Leader election on one etcd key.
//
// A candidate campaigns by creating the leader key under its lease (put if
// absent). It leads while the key exists with that create_revision; the
// Fence it gets (key + create_revision) is the fencing token that every
// leader write must carry (FencedTxn in fence.h). Leadership ends when the
// candidate resigns, when its lease expires (Session lost), or when the key
// is deleted; the next candidate's Campaign then creates the key again, with
// a larger create_revision, so the old leader's fenced writes are rejected.
//
// The lease is the caller's (usually Session::lease_id()): the caller watches
// its Session for loss and steps down on it, or on an IsFenced() error.
//
// Threading: an Election is thread-safe (it holds no state besides its
// configuration); Campaign blocks the calling thread. The Client must
// outlive it.
#ifndef BALLAST_AGENT_ETCD_ELECTION_H_
#define BALLAST_AGENT_ETCD_ELECTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/etcd/client.h"
#include "agent/etcd/fence.h"
#include "agent/etcd/watch.h"

namespace ballast::etcd {

class Election {
 public:
  // `key`: the leader key, e.g. "/ballast/leader". `value`: what observers
  // see of this candidate (its node name). `lease`: the candidate's lease.
  Election(Client& client, std::string key, int64_t lease, std::string value);

  // One attempt, without waiting: the fence when this candidate leads now
  // (also when it already led under the same lease), nullopt otherwise.
  absl::StatusOr<std::optional<Fence>> TryCampaign();
  // Waits until this candidate leads, up to `timeout` (DEADLINE_EXCEEDED
  // naming the current leader). Wakes on the leader key's deletion.
  absl::StatusOr<Fence> Campaign(absl::Duration timeout);
  // Ends leadership by deleting the key if it is still ours (OK if gone).
  absl::Status Resign(const Fence& fence);

  // The current leader's key (value = its node name), or nullopt.
  absl::StatusOr<std::optional<KeyValue>> Leader();
  // Calls `on_change` with the current leader (or nullopt) now and on every
  // change, from the watch thread (first call from this thread). Stop by
  // destroying the returned Watch. If the watch falls behind a compaction it
  // reports the leader it then reads once more and ends: observe again.
  absl::StatusOr<std::unique_ptr<Watch>> Observe(
      std::function<void(const std::optional<KeyValue>&)> on_change);

  const std::string& key() const { return key_; }

 private:
  Client& client_;
  const std::string key_;
  const int64_t lease_;
  const std::string value_;
};

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_ELECTION_H_
