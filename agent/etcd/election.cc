#include "agent/etcd/election.h"

#include <condition_variable>
#include <mutex>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::etcd {

Election::Election(Client& client, std::string key, int64_t lease, std::string value)
    : client_(client), key_(std::move(key)), lease_(lease), value_(std::move(value)) {}

absl::StatusOr<std::optional<Fence>> Election::TryCampaign() {
  absl::StatusOr<ClaimResult> claim = ClaimKey(client_, key_, value_, lease_);
  if (!claim.ok()) return claim.status();
  return claim->fence;
}

absl::StatusOr<Fence> Election::Campaign(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::optional<KeyValue> last_holder;
  absl::Status last_error;
  while (true) {
    absl::StatusOr<ClaimResult> claim = ClaimKey(client_, key_, value_, lease_);
    int64_t watch_from = 0;
    if (claim.ok()) {
      if (claim->fence.has_value()) return *claim->fence;
      last_holder = claim->holder;
      watch_from = claim->revision + 1;
    } else {
      last_error = claim.status();
    }
    if (absl::Now() >= deadline) break;
    if (watch_from == 0) {
      // etcd unreachable or the outcome unknown: try again shortly.
      absl::SleepFor(std::min(deadline - absl::Now(), absl::Milliseconds(200)));
      continue;
    }
    // Wait for the holder's key to go (delete or lease expiry), from the
    // revision of the read, so a deletion in between is not missed.
    std::mutex mu;
    std::condition_variable cv;
    bool wake = false;
    WatchSpec spec;
    spec.key = key_;
    spec.start_revision = watch_from;
    absl::StatusOr<std::unique_ptr<Watch>> watch =
        client_.StartWatch(spec, [&](const WatchUpdate& u) {
          bool relevant =
              u.kind != WatchUpdate::Kind::kProgress && u.kind != WatchUpdate::Kind::kResumed;
          if (u.kind == WatchUpdate::Kind::kEvents) {
            relevant = false;
            for (const Event& e : u.events) relevant |= e.type == Event::Type::kDelete;
          }
          if (!relevant) return;
          std::lock_guard<std::mutex> lock(mu);
          wake = true;
          cv.notify_all();
        });
    if (!watch.ok()) {
      last_error = watch.status();
      absl::SleepFor(std::min(deadline - absl::Now(), absl::Milliseconds(200)));
      continue;
    }
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_until(lock, absl::ToChronoTime(deadline), [&] { return wake; });
    }
    (*watch)->Stop();
  }
  if (last_holder.has_value()) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "election %s: not leader after %s; \"%s\" leads (create_revision %d, lease %x)", key_,
        absl::FormatDuration(timeout), absl::CHexEscape(last_holder->value),
        last_holder->create_revision, last_holder->lease));
  }
  return absl::DeadlineExceededError(absl::StrFormat("election %s: not leader after %s: %s", key_,
                                                     absl::FormatDuration(timeout),
                                                     last_error.message()));
}

absl::Status Election::Resign(const Fence& fence) { return ReleaseKey(client_, fence); }

absl::StatusOr<std::optional<KeyValue>> Election::Leader() {
  absl::StatusOr<RangeResult> r = client_.Get(key_);
  if (!r.ok()) return r.status();
  if (r->kvs.empty()) return std::optional<KeyValue>();
  return std::optional<KeyValue>(r->kvs[0]);
}

absl::StatusOr<std::unique_ptr<Watch>> Election::Observe(
    std::function<void(const std::optional<KeyValue>&)> on_change) {
  absl::StatusOr<RangeResult> r = client_.Get(key_);
  if (!r.ok()) return r.status();
  on_change(r->kvs.empty() ? std::nullopt : std::optional<KeyValue>(r->kvs[0]));
  WatchSpec spec;
  spec.key = key_;
  spec.start_revision = r->revision + 1;
  Client* client = &client_;
  std::string key = key_;
  return client_.StartWatch(spec, [client, key, on_change](const WatchUpdate& u) {
    if (u.kind == WatchUpdate::Kind::kEvents) {
      const Event& last = u.events.back();
      on_change(last.type == Event::Type::kDelete ? std::nullopt
                                                  : std::optional<KeyValue>(last.kv));
    } else if (u.kind == WatchUpdate::Kind::kCompacted) {
      // History is gone: report the current state. The watch has ended; the
      // caller learns of later changes only by observing again.
      absl::StatusOr<RangeResult> now = client->Get(key);
      if (now.ok())
        on_change(now->kvs.empty() ? std::nullopt : std::optional<KeyValue>(now->kvs[0]));
    }
  });
}

}  // namespace ballast::etcd
