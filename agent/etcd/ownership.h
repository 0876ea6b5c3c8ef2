// Ownership of one key under its own lease: per-VIP active/standby ownership.
//
// TryAcquire creates the key (put if absent) under a fresh lease with the
// given TTL and keeps that lease alive (a Session). The owner holds it until
// it releases it, or loses it: the lease is lost (etcd says it expired, or no
// keep-alive was acknowledged before the deadline) or the key is deleted or
// replaced by someone else. Loss is reported once through on_lost.
//
// Deadline. deadline() is the lease deadline (Session::deadline(): send time
// of the last acknowledged keep-alive + TTL, CLOCK_MONOTONIC), a time before
// which no other node can acquire the key. An owner that forwards traffic
// writes a strictly earlier deadline into the data plane (deadline() minus a
// margin for its own scheduling) and moves it forward as renewals succeed, so
// a frozen owner stops forwarding before a standby can take over.
//
// Writes that depend on ownership carry fence() (FencedTxn in fence.h).
//
// The key watch is kept for as long as the key is held: when it ends (its
// history compacted, e.g. after a member restart) the key is read again and
// a new watch starts from that read.
//
// Threading: thread-safe. on_lost runs on an internal thread (keep-alive or
// watch) and must not destroy the Ownership. The Client must outlive it.
#ifndef BALLAST_AGENT_ETCD_OWNERSHIP_H_
#define BALLAST_AGENT_ETCD_OWNERSHIP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/etcd/client.h"
#include "agent/etcd/fence.h"
#include "agent/etcd/session.h"
#include "agent/etcd/watch.h"

namespace ballast::etcd {

struct OwnershipOptions {
  int64_t ttl_seconds = 10;
  std::function<void(const absl::Status&)> on_lost;
};

class Ownership {
 public:
  // Takes `key` if nobody holds it. nullptr (and *holder set, when given)
  // when someone else does; an error when etcd could not be asked.
  static absl::StatusOr<std::unique_ptr<Ownership>> TryAcquire(Client& client, std::string key,
                                                               std::string value,
                                                               OwnershipOptions options,
                                                               KeyValue* holder = nullptr);
  // Release(), ignoring its error.
  ~Ownership();
  Ownership(const Ownership&) = delete;
  Ownership& operator=(const Ownership&) = delete;

  const Fence& fence() const { return fence_; }
  int64_t lease_id() const { return session_->lease_id(); }
  bool held() const;
  // OK while held; why it was lost or "released" afterwards.
  absl::Status status() const;
  Session::Clock::time_point deadline() const { return session_->deadline(); }

  // Deletes the key if still ours and revokes the lease. Idempotent.
  absl::Status Release();

 private:
  Ownership(Client& client, OwnershipOptions options);
  void Lose(const absl::Status& why);
  // Watches the key from `from_revision` (a deletion or re-creation loses
  // ownership), replacing the current watch.
  absl::Status WatchKey(int64_t from_revision);
  // The watch's callback. When the watch ends (compaction, refusal) it reads
  // the key and watches again from there, for as long as it is held.
  void OnKeyWatch(const WatchUpdate& u);

  Client& client_;
  OwnershipOptions options_;
  Fence fence_;
  std::unique_ptr<Session> session_;

  std::mutex watch_mu_;
  std::unique_ptr<Watch> watch_;
  std::vector<std::unique_ptr<Watch>> retired_;  // ended watches, stopped by Release()
  bool watch_closed_ = false;                    // Release() took the watches

  mutable std::mutex mu_;
  absl::Status status_;
  bool released_ = false;
};

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_OWNERSHIP_H_
