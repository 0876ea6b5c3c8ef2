// Fencing: proof that this process holds a key, checked by etcd inside every
// write that depends on it.
//
// A Fence is a key and the create_revision it had when we took it. The key is
// put-if-absent under our lease, so it is created once per holder: a holder
// that lost it (lease expired, key deleted) cannot get the same
// create_revision back, and a new holder's key has a larger one. FencedTxn
// makes etcd compare the key's create_revision with the fence in the same
// transaction as the writes, so a stale holder's writes are rejected by etcd
// itself, whatever the stale holder believes.
//
// Stateless functions; thread-safe as the Client is.
#ifndef BALLAST_AGENT_ETCD_FENCE_H_
#define BALLAST_AGENT_ETCD_FENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/etcd/client.h"

namespace ballast::etcd {

struct Fence {
  std::string key;
  int64_t revision = 0;  // the key's create_revision: the fencing token
};

struct ClaimResult {
  std::optional<Fence> fence;      // set: we hold the key
  std::optional<KeyValue> holder;  // unset fence: who holds it now
  int64_t revision = 0;            // store revision of the answer
};

// Creates `key` = `value` attached to `lease` if the key does not exist. Also
// reports the key as ours when it already exists with our lease (a retry
// after an unknown outcome). Never overwrites someone else's key.
absl::StatusOr<ClaimResult> ClaimKey(Client& client, absl::string_view key, absl::string_view value,
                                     int64_t lease);

// Applies `ops` atomically if the fence still holds and every compare holds.
//   - fence lost: FAILED_PRECONDITION, IsFenced() true, the message names who
//     holds the key now. Nothing was written; the caller must step down.
//   - fence held, a caller compare failed: TxnResult with succeeded false.
//   - success: TxnResult with succeeded true and the results of `ops`.
// Not retried after it was sent (UNAVAILABLE "outcome unknown").
absl::StatusOr<TxnResult> FencedTxn(Client& client, const Fence& fence,
                                    const std::vector<Compare>& compares,
                                    const std::vector<Op>& ops);

// Deletes the fenced key if it is still ours. OK when it is gone already;
// FAILED_PRECONDITION (IsFenced) when someone else holds it.
absl::Status ReleaseKey(Client& client, const Fence& fence);

bool IsFenced(const absl::Status& status);

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_FENCE_H_
