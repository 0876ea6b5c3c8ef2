#include "agent/etcd/ownership.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::etcd {

Ownership::Ownership(Client& client, OwnershipOptions options)
    : client_(client), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Ownership>> Ownership::TryAcquire(Client& client, std::string key,
                                                                 std::string value,
                                                                 OwnershipOptions options,
                                                                 KeyValue* holder) {
  std::unique_ptr<Ownership> own(new Ownership(client, std::move(options)));
  Ownership* self = own.get();
  SessionOptions so;
  so.ttl_seconds = own->options_.ttl_seconds;
  so.on_lost = [self](const absl::Status& why) { self->Lose(why); };
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(client, std::move(so));
  if (!session.ok()) return session.status();
  own->session_ = std::move(*session);

  absl::StatusOr<ClaimResult> claim = ClaimKey(client, key, value, own->session_->lease_id());
  if (!claim.ok() || !claim->fence.has_value()) {
    own->released_ = true;
    (void)own->session_->Close();
    if (!claim.ok()) return claim.status();
    if (holder != nullptr && claim->holder.has_value()) *holder = *claim->holder;
    return std::unique_ptr<Ownership>();
  }
  own->fence_ = *claim->fence;

  // The key may go while the lease lives (an operator deletes it, a bug
  // overwrites it): that ends ownership too.
  WatchSpec spec;
  spec.key = key;
  spec.start_revision = own->fence_.revision + 1;
  Fence fence = own->fence_;
  absl::StatusOr<std::unique_ptr<Watch>> watch = client.StartWatch(spec, [self, fence, &client](
                                                                             const WatchUpdate& u) {
    if (u.kind == WatchUpdate::Kind::kEvents) {
      for (const Event& e : u.events) {
        if (e.type == Event::Type::kDelete) {
          self->Lose(absl::AbortedError(
              absl::StrFormat("ownership of %s lost: the key was deleted at revision %d", fence.key,
                              e.kv.mod_revision)));
          return;
        }
        if (e.kv.create_revision != fence.revision) {
          self->Lose(absl::AbortedError(
              absl::StrFormat("ownership of %s lost: the key was re-created at revision %d",
                              fence.key, e.kv.create_revision)));
          return;
        }
      }
    } else if (u.kind == WatchUpdate::Kind::kCompacted || u.kind == WatchUpdate::Kind::kFailed) {
      // The watch has ended: check the key once; the lease still guards
      // against expiry.
      absl::StatusOr<RangeResult> now = client.Get(fence.key);
      if (now.ok() && (now->kvs.empty() || now->kvs[0].create_revision != fence.revision)) {
        self->Lose(absl::AbortedError(
            absl::StrFormat("ownership of %s lost: the key is gone or re-created", fence.key)));
      }
    }
  });
  if (!watch.ok()) {
    (void)own->Release();
    return watch.status();
  }
  own->watch_ = std::move(*watch);
  return own;
}

Ownership::~Ownership() { (void)Release(); }

bool Ownership::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_.ok() && !released_;
}

absl::Status Ownership::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (released_ && status_.ok()) {
    return absl::CancelledError(absl::StrCat("ownership of ", fence_.key, ": released"));
  }
  return status_;
}

void Ownership::Lose(const absl::Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status_.ok() || released_) return;
    status_ = why;
  }
  if (options_.on_lost) options_.on_lost(why);
}

absl::Status Ownership::Release() {
  bool was_held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_held = status_.ok() && !released_;
    released_ = true;
  }
  if (watch_ != nullptr) watch_->Stop();
  absl::Status s = absl::OkStatus();
  if (was_held && fence_.revision != 0) s = ReleaseKey(client_, fence_);
  if (session_ != nullptr) {
    absl::Status closed = session_->Close();
    if (s.ok()) s = closed;
  }
  return s;
}

}  // namespace ballast::etcd
