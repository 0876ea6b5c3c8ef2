#include "agent/etcd/fence.h"

#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::etcd {

namespace {

constexpr absl::string_view kFencedPayload = "type.ballast.dev/etcd.Fenced";

absl::Status Fenced(const Fence& fence, const std::optional<KeyValue>& now) {
  std::string msg;
  if (!now.has_value()) {
    msg = absl::StrFormat("fenced: %s no longer exists (our token %d); step down", fence.key,
                          fence.revision);
  } else {
    msg = absl::StrFormat(
        "fenced: %s is held by another holder (create_revision %d, lease %x, value \"%s\"; our "
        "token %d); step down",
        fence.key, now->create_revision, now->lease, absl::CHexEscape(now->value), fence.revision);
  }
  absl::Status s = absl::FailedPreconditionError(msg);
  s.SetPayload(kFencedPayload, absl::Cord("1"));
  return s;
}

}  // namespace

bool IsFenced(const absl::Status& status) { return status.GetPayload(kFencedPayload).has_value(); }

absl::StatusOr<ClaimResult> ClaimKey(Client& client, absl::string_view key, absl::string_view value,
                                     int64_t lease) {
  absl::StatusOr<TxnResult> txn =
      client.Txn({Compare::Missing(key)}, {Op::Put(key, value, lease)}, {Op::Get(key)});
  ClaimResult out;
  if (!txn.ok()) {
    if (txn.status().code() != absl::StatusCode::kUnavailable) return txn.status();
    // Outcome unknown: the key tells.
    absl::StatusOr<RangeResult> now = client.Get(key);
    if (!now.ok()) return txn.status();
    out.revision = now->revision;
    if (!now->kvs.empty() && lease != 0 && now->kvs[0].lease == lease) {
      out.fence = Fence{std::string(key), now->kvs[0].create_revision};
      return out;
    }
    if (now->kvs.empty()) return txn.status();  // not applied; the caller may retry
    out.holder = now->kvs[0];
    return out;
  }
  out.revision = txn->revision;
  if (txn->succeeded) {
    // The put is the transaction's only write: the key's create_revision is
    // the transaction's revision.
    out.fence = Fence{std::string(key), txn->revision};
    return out;
  }
  if (txn->results.empty() || txn->results[0].kvs.empty()) {
    // Deleted between the compare and the read cannot happen inside one
    // transaction; treat it as a protocol surprise.
    return absl::InternalError(absl::StrCat("etcd claim ", key, ": compare failed but no key"));
  }
  const KeyValue& holder = txn->results[0].kvs[0];
  if (lease != 0 && holder.lease == lease) {
    out.fence = Fence{std::string(key), holder.create_revision};
  } else {
    out.holder = holder;
  }
  return out;
}

absl::StatusOr<TxnResult> FencedTxn(Client& client, const Fence& fence,
                                    const std::vector<Compare>& compares,
                                    const std::vector<Op>& ops) {
  std::vector<Compare> all;
  all.reserve(compares.size() + 1);
  all.push_back(Compare::CreateRevision(fence.key, Compare::Result::kEqual, fence.revision));
  all.insert(all.end(), compares.begin(), compares.end());
  absl::StatusOr<TxnResult> txn = client.Txn(all, ops, {Op::Get(fence.key)});
  if (!txn.ok() || txn->succeeded) return txn;
  std::optional<KeyValue> now;
  if (!txn->results.empty() && !txn->results[0].kvs.empty()) now = txn->results[0].kvs[0];
  if (!now.has_value() || now->create_revision != fence.revision) return Fenced(fence, now);
  TxnResult out;
  out.succeeded = false;
  out.revision = txn->revision;
  return out;
}

absl::Status ReleaseKey(Client& client, const Fence& fence) {
  absl::StatusOr<TxnResult> txn =
      client.Txn({Compare::CreateRevision(fence.key, Compare::Result::kEqual, fence.revision)},
                 {Op::Delete(fence.key)}, {Op::Get(fence.key)});
  if (!txn.ok()) return txn.status();
  if (txn->succeeded) return absl::OkStatus();
  if (txn->results.empty() || txn->results[0].kvs.empty()) return absl::OkStatus();  // gone
  return Fenced(fence, txn->results[0].kvs[0]);
}

}  // namespace ballast::etcd
