// An etcd v3 client over gRPC: key-value reads and writes, transactions,
// leases and watches, against a list of cluster members with failover.
//
// Failover. The client keeps one gRPC channel per endpoint and sends each
// call to the member that answered last. A member that cannot be connected
// to within `connect_timeout` is skipped before anything is sent, for every
// kind of call. When a call was sent and failed with UNAVAILABLE or ran out
// its `attempt_timeout`:
//   - reads, Put, Delete, lease calls and Status are retried on the next
//     member (Put and Delete have the same end state when applied twice; a
//     retried Put may produce one extra revision);
//   - Txn is not retried: it may or may not have been applied, and the error
//     (UNAVAILABLE, "outcome unknown") says so. Callers re-read and decide.
// Every call has an overall deadline (`call_timeout`) across all attempts.
//
// Errors are absl::Status values that name the operation, the key and the
// member ("etcd Put /ballast/x via 127.0.0.1:2379: ..."). The gRPC code is
// kept (etcd's "required revision has been compacted" is OUT_OF_RANGE, see
// IsCompacted()).
//
// Threading: a Client is thread-safe; share one per process. It must outlive
// every Watch, Session, Election and Ownership made from it.
#ifndef BALLAST_AGENT_ETCD_CLIENT_H_
#define BALLAST_AGENT_ETCD_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/etcd/endpoint.h"
#include "agent/etcd/types.h"

namespace grpc {
class Channel;
class ClientContext;
class Status;
}  // namespace grpc

namespace ballast::etcd {

class Watch;
struct WatchUpdate;

struct ClientOptions {
  // "https://host:port", "http://host:port" or "host:port"; at least one.
  // TLS and the plaintext rule: endpoint.h.
  std::vector<std::string> endpoints;
  TlsOptions tls;
  // etcd's user/password authentication: Authenticate once, the token sent
  // with every call and fetched again when the server no longer takes it.
  // Empty username: no token (a server with auth enabled then takes the
  // user from the client certificate's CN, or refuses).
  std::string username;
  std::string password;
  // Deadline of one call, across every member tried.
  absl::Duration call_timeout = absl::Seconds(5);
  // Deadline of one attempt on one member.
  absl::Duration attempt_timeout = absl::Seconds(2);
  // How long to wait for a member's connection before skipping it.
  absl::Duration connect_timeout = absl::Milliseconds(500);
};

// What one member says about itself (Maintenance.Status).
struct MemberStatus {
  std::string endpoint;
  std::string version;
  uint64_t member_id = 0;
  uint64_t leader_id = 0;  // 0: the member knows no leader
  uint64_t raft_term = 0;
  int64_t revision = 0;
  std::vector<std::string> errors;  // alarms
};

struct LeaseGrant {
  int64_t id = 0;
  int64_t ttl_seconds = 0;  // as granted; the server may raise a short TTL
};

class Client {
 public:
  // Validates the options and creates the channels; does not connect (the
  // first call does). Use Health() to wait for the cluster.
  static absl::StatusOr<std::unique_ptr<Client>> Create(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const { return options_; }

  // ---- key-value ----
  // Reads one key (found == kvs.size() == 1).
  absl::StatusOr<RangeResult> Get(absl::string_view key, const ReadOptions& read = {});
  // Reads every key that starts with `prefix`, in key order.
  absl::StatusOr<RangeResult> GetPrefix(absl::string_view prefix, const ReadOptions& read = {});
  // Writes a key; attached to `lease` unless 0. Returns the new revision.
  absl::StatusOr<int64_t> Put(absl::string_view key, absl::string_view value, int64_t lease = 0);
  // Deletes one key / every key under a prefix. Returns how many were deleted.
  absl::StatusOr<int64_t> Delete(absl::string_view key);
  absl::StatusOr<int64_t> DeletePrefix(absl::string_view prefix);
  // If every compare holds, applies `success`, else `failure`, atomically.
  // Not retried after it was sent (see the header comment).
  absl::StatusOr<TxnResult> Txn(const std::vector<Compare>& compares,
                                const std::vector<Op>& success,
                                const std::vector<Op>& failure = {});
  // Discards history before `revision` (watches from before it then see
  // kCompacted). An operator/test tool; the agent does not compact.
  absl::Status Compact(int64_t revision);

  // ---- leases ----
  absl::StatusOr<LeaseGrant> GrantLease(int64_t ttl_seconds);
  // Revokes a lease and deletes its keys. A lease that is already gone is OK.
  absl::Status RevokeLease(int64_t id);
  // One keep-alive round trip, finished by `deadline`; returns the renewed
  // TTL in seconds, or NOT_FOUND when the lease has expired or was revoked.
  // Each member gets at most a third of the time left (so a frozen member
  // leaves time to try the others). Session runs these in the background.
  absl::StatusOr<int64_t> KeepAliveOnce(int64_t id, absl::Time deadline);
  // Remaining TTL in seconds; NOT_FOUND when the lease does not exist.
  absl::StatusOr<int64_t> LeaseTimeToLive(int64_t id);

  // ---- watch ----
  // Streams changes to `key` (or every key under it when spec.prefix) from
  // spec.start_revision (0: from the current revision, read first). The
  // callback runs on the watch's own thread, one update at a time; see
  // WatchUpdate for what it is told. Reconnects to other members and resumes
  // after the last delivered revision, so no event is lost or repeated.
  absl::StatusOr<std::unique_ptr<Watch>> StartWatch(
      const WatchSpec& spec, std::function<void(const WatchUpdate&)> callback);

  // ---- cluster ----
  // Status of one member, without failover (`endpoint` as in the options).
  absl::StatusOr<MemberStatus> MemberStatusOf(absl::string_view endpoint);
  // OK when some member answers and knows a leader; the error lists each
  // member's problem otherwise.
  absl::Status Health();

  // Internal, for Watch: the channel of endpoint i, waiting up to `timeout`
  // for it to connect; null when it did not.
  std::shared_ptr<grpc::Channel> ConnectedChannel(size_t i, absl::Duration timeout);
  // Internal, for Watch: adds the auth token (fetched through endpoint i
  // when there is none yet) to `ctx` and returns it ("" without a username).
  absl::StatusOr<std::string> Authorize(size_t i, grpc::ClientContext& ctx, absl::Time deadline);
  // Internal: forget `token` after the server refused it (next call fetches one).
  void DropToken(const std::string& token);
  size_t preferred() const { return preferred_.load(std::memory_order_relaxed); }
  void set_preferred(size_t i) { preferred_.store(i, std::memory_order_relaxed); }

 private:
  struct Endpoint;
  explicit Client(ClientOptions options);

  // Runs `attempt` on members in turn (see the header comment). `what` names
  // the operation in errors. `retry_after_send` is false for Txn.
  absl::Status Call(absl::string_view what, bool retry_after_send,
                    const std::function<grpc::Status(Endpoint&, grpc::ClientContext&)>& attempt,
                    absl::Time deadline = absl::InfiniteFuture(),
                    absl::Duration attempt_timeout = absl::InfiniteDuration());
  absl::StatusOr<RangeResult> Range(absl::string_view what, std::string key, std::string range_end,
                                    const ReadOptions& read);
  absl::StatusOr<int64_t> DeleteRange(absl::string_view what, std::string key,
                                      std::string range_end);

  // The current token, or one fetched through `ep`.
  absl::StatusOr<std::string> Token(Endpoint& ep, absl::Time deadline);
  // Why endpoint `ep` does not connect (gRPC's last error, e.g. a TLS
  // handshake failure), for error messages.
  std::string ConnectProblem(Endpoint& ep);

  ClientOptions options_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::mutex token_mu_;
  std::string token_;  // guarded by token_mu_
  std::atomic<size_t> preferred_{0};
};

// True when the server refused the call's auth token (expired, or the
// server restarted): fetch a new one and try again.
bool IsInvalidToken(const grpc::Status& status);

// True for etcd's "required revision has been compacted" (a Get at an old
// revision): the caller must start over from a fresh read.
bool IsCompacted(const absl::Status& status);

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_CLIENT_H_
