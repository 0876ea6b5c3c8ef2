#include "agent/etcd/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "agent/etcd/credentials.h"
#include "agent/etcd/watch.h"
#include "etcd/etcdserverpb/rpc.grpc.pb.h"

namespace ballast::etcd {

namespace pb = ::etcdserverpb;

struct Client::Endpoint {
  std::string name;  // host:port, as shown in errors
  bool tls = false;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Lease::Stub> lease;
  std::unique_ptr<pb::Maintenance::Stub> maintenance;
  std::unique_ptr<pb::Auth::Stub> auth;
};

namespace {

std::chrono::system_clock::time_point ToChrono(absl::Time t) { return absl::ToChronoTime(t); }

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what, absl::string_view ep) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat("etcd ", what, " via ", ep, ": ", s.error_message()));
}

KeyValue FromPb(const mvccpb::KeyValue& kv) {
  KeyValue out;
  out.key = kv.key();
  out.value = kv.value();
  out.create_revision = kv.create_revision();
  out.mod_revision = kv.mod_revision();
  out.version = kv.version();
  out.lease = kv.lease();
  return out;
}

pb::Compare ToPb(const Compare& c) {
  pb::Compare out;
  out.set_key(c.key);
  switch (c.result) {
    case Compare::Result::kEqual:
      out.set_result(pb::Compare::EQUAL);
      break;
    case Compare::Result::kNotEqual:
      out.set_result(pb::Compare::NOT_EQUAL);
      break;
    case Compare::Result::kGreater:
      out.set_result(pb::Compare::GREATER);
      break;
    case Compare::Result::kLess:
      out.set_result(pb::Compare::LESS);
      break;
  }
  switch (c.target) {
    case Compare::Target::kValue:
      out.set_target(pb::Compare::VALUE);
      out.set_value(c.value);
      break;
    case Compare::Target::kVersion:
      out.set_target(pb::Compare::VERSION);
      out.set_version(c.number);
      break;
    case Compare::Target::kCreateRevision:
      out.set_target(pb::Compare::CREATE);
      out.set_create_revision(c.number);
      break;
    case Compare::Target::kModRevision:
      out.set_target(pb::Compare::MOD);
      out.set_mod_revision(c.number);
      break;
    case Compare::Target::kLease:
      out.set_target(pb::Compare::LEASE);
      out.set_lease(c.number);
      break;
  }
  return out;
}

pb::RequestOp ToPb(const Op& op) {
  pb::RequestOp out;
  switch (op.type) {
    case Op::Type::kGet: {
      auto* r = out.mutable_request_range();
      r->set_key(op.key);
      r->set_range_end(op.range_end);
      break;
    }
    case Op::Type::kPut: {
      auto* r = out.mutable_request_put();
      r->set_key(op.key);
      r->set_value(op.value);
      r->set_lease(op.lease);
      break;
    }
    case Op::Type::kDelete: {
      auto* r = out.mutable_request_delete_range();
      r->set_key(op.key);
      r->set_range_end(op.range_end);
      break;
    }
  }
  return out;
}

OpResult FromPb(const pb::ResponseOp& r) {
  OpResult out;
  if (r.has_response_range()) {
    out.type = Op::Type::kGet;
    for (const auto& kv : r.response_range().kvs()) out.kvs.push_back(FromPb(kv));
  } else if (r.has_response_put()) {
    out.type = Op::Type::kPut;
  } else if (r.has_response_delete_range()) {
    out.type = Op::Type::kDelete;
    out.deleted = r.response_delete_range().deleted();
  }
  return out;
}

bool WaitConnected(grpc::Channel& channel, absl::Time deadline) {
  if (channel.GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return true;
  if (absl::Now() >= deadline) return false;
  return channel.WaitForConnected(ToChrono(deadline));
}

}  // namespace

// ---- types.h helpers ----------------------------------------------------------

std::string PrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

Compare Compare::Value(absl::string_view key, Result r, absl::string_view value) {
  Compare c;
  c.target = Target::kValue;
  c.result = r;
  c.key = std::string(key);
  c.value = std::string(value);
  return c;
}

namespace {
Compare NumberCompare(Compare::Target t, absl::string_view key, Compare::Result r, int64_t n) {
  Compare c;
  c.target = t;
  c.result = r;
  c.key = std::string(key);
  c.number = n;
  return c;
}
}  // namespace

Compare Compare::Version(absl::string_view key, Result r, int64_t version) {
  return NumberCompare(Target::kVersion, key, r, version);
}
Compare Compare::CreateRevision(absl::string_view key, Result r, int64_t revision) {
  return NumberCompare(Target::kCreateRevision, key, r, revision);
}
Compare Compare::ModRevision(absl::string_view key, Result r, int64_t revision) {
  return NumberCompare(Target::kModRevision, key, r, revision);
}
Compare Compare::Lease(absl::string_view key, Result r, int64_t lease) {
  return NumberCompare(Target::kLease, key, r, lease);
}

Op Op::Get(absl::string_view key) {
  Op op;
  op.type = Type::kGet;
  op.key = std::string(key);
  return op;
}
Op Op::GetPrefix(absl::string_view prefix) {
  Op op = Get(prefix);
  op.range_end = PrefixEnd(prefix);
  return op;
}
Op Op::Put(absl::string_view key, absl::string_view value, int64_t lease) {
  Op op;
  op.type = Type::kPut;
  op.key = std::string(key);
  op.value = std::string(value);
  op.lease = lease;
  return op;
}
Op Op::Delete(absl::string_view key) {
  Op op;
  op.type = Type::kDelete;
  op.key = std::string(key);
  return op;
}
Op Op::DeletePrefix(absl::string_view prefix) {
  Op op = Delete(prefix);
  op.range_end = PrefixEnd(prefix);
  return op;
}

bool IsInvalidToken(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAUTHENTICATED &&
         absl::StrContains(status.error_message(), "invalid auth token");
}

bool IsCompacted(const absl::Status& status) {
  return status.code() == absl::StatusCode::kOutOfRange &&
         absl::StrContains(status.message(), "compacted");
}

// ---- Client -------------------------------------------------------------------

Client::Client(ClientOptions options) : options_(std::move(options)) {}
Client::~Client() = default;

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("etcd client: no endpoints given");
  }
  if (options.call_timeout <= absl::ZeroDuration() ||
      options.attempt_timeout <= absl::ZeroDuration() ||
      options.connect_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("etcd client: timeouts must be positive");
  }
  if (options.username.empty() && !options.password.empty()) {
    return absl::InvalidArgumentError("etcd client: a password without a username");
  }
  std::unique_ptr<Client> client(new Client(options));
  for (const std::string& url : options.endpoints) {
    absl::StatusOr<EndpointTarget> target = ParseEndpoint(url, options.tls);
    if (!target.ok()) return target.status();
    auto creds = MakeCredentials(target->tls, options.tls);
    if (!creds.ok()) return creds.status();
    grpc::ChannelArguments args;
    if (target->tls && !options.tls.server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls.server_name);
    }
    // Each channel owns its connection (not shared with other channels to
    // the same member), reconnects within a second of a member coming back,
    // and detects a silent member (frozen, partitioned) on open streams with
    // HTTP/2 pings. etcd refuses pings more often than every 5 s by default.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 3000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    auto ep = std::make_unique<Endpoint>();
    ep->name = target->host_port;
    ep->tls = target->tls;
    ep->channel = grpc::CreateCustomChannel(target->host_port, *creds, args);
    ep->kv = pb::KV::NewStub(ep->channel);
    ep->lease = pb::Lease::NewStub(ep->channel);
    ep->maintenance = pb::Maintenance::NewStub(ep->channel);
    ep->auth = pb::Auth::NewStub(ep->channel);
    client->endpoints_.push_back(std::move(ep));
  }
  return client;
}

std::shared_ptr<grpc::Channel> Client::ConnectedChannel(size_t i, absl::Duration timeout) {
  Endpoint& ep = *endpoints_[i % endpoints_.size()];
  if (!WaitConnected(*ep.channel, absl::Now() + timeout)) return nullptr;
  return ep.channel;
}

absl::Status Client::Call(
    absl::string_view what, bool retry_after_send,
    const std::function<grpc::Status(Endpoint&, grpc::ClientContext&)>& attempt,
    absl::Time deadline_cap, absl::Duration attempt_cap) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = std::min(start + options_.call_timeout, deadline_cap);
  const size_t n = endpoints_.size();
  size_t i = preferred() % n;
  std::map<std::string, std::string> problems;  // member -> its last problem
  while (absl::Now() < deadline) {
    for (size_t k = 0; k < n; ++k, i = (i + 1) % n) {
      Endpoint& ep = *endpoints_[i];
      const absl::Time now = absl::Now();
      if (now >= deadline) break;
      if (!WaitConnected(*ep.channel, std::min(deadline, now + options_.connect_timeout))) {
        problems[ep.name] = ConnectProblem(ep);
        continue;  // nothing was sent: safe to try the next member
      }
      const absl::Time attempt_deadline =
          std::min(deadline, absl::Now() + std::min(options_.attempt_timeout, attempt_cap));
      grpc::Status s;
      // A refused token is fetched again once (it expired, or the member
      // restarted); a refused user or password is final.
      for (int round = 0; round < 2; ++round) {
        absl::StatusOr<std::string> token = Token(ep, attempt_deadline);
        if (!token.ok()) {
          if (absl::IsUnavailable(token.status()) || absl::IsDeadlineExceeded(token.status())) {
            s = grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(token.status().message()));
            break;
          }
          return token.status();
        }
        grpc::ClientContext ctx;
        ctx.set_deadline(ToChrono(attempt_deadline));
        if (!token->empty()) ctx.AddMetadata("token", *token);
        s = attempt(ep, ctx);
        if (!IsInvalidToken(s) || token->empty()) break;
        DropToken(*token);
      }
      if (s.ok()) {
        set_preferred(i);
        return absl::OkStatus();
      }
      const bool member_problem = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                                  s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
      if (!member_problem) return FromGrpc(s, what, ep.name);
      if (!retry_after_send) {
        // Leave the next call to another member; this one may be sick.
        set_preferred((i + 1) % n);
        return absl::UnavailableError(
            absl::StrCat("etcd ", what, " via ", ep.name, ": ", s.error_message(),
                         " (outcome unknown: it may have been applied; re-read before retrying)"));
      }
      problems[ep.name] = s.error_message();
    }
    // Every member failed this round: pause briefly, then go round again.
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    absl::SleepFor(std::min(left, absl::Milliseconds(100)));
  }
  std::vector<std::string> parts;
  for (const auto& [name, problem] : problems) parts.push_back(absl::StrCat(name, ": ", problem));
  return absl::UnavailableError(absl::StrCat(
      "etcd ", what, ": no member answered within ", absl::FormatDuration(deadline - start),
      parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, "; "), ")")));
}

absl::StatusOr<RangeResult> Client::Range(absl::string_view what, std::string key,
                                          std::string range_end, const ReadOptions& read) {
  pb::RangeRequest req;
  req.set_key(std::move(key));
  req.set_range_end(std::move(range_end));
  req.set_revision(read.revision);
  req.set_limit(read.limit);
  req.set_serializable(read.serializable);
  req.set_keys_only(read.keys_only);
  pb::RangeResponse resp;
  absl::Status s = Call(what, true, [&](Endpoint& ep, grpc::ClientContext& ctx) {
    resp.Clear();
    return ep.kv->Range(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  RangeResult out;
  out.revision = resp.header().revision();
  out.more = resp.more();
  out.kvs.reserve(resp.kvs_size());
  for (const auto& kv : resp.kvs()) out.kvs.push_back(FromPb(kv));
  return out;
}

absl::StatusOr<RangeResult> Client::Get(absl::string_view key, const ReadOptions& read) {
  return Range(absl::StrCat("Get ", key), std::string(key), "", read);
}

absl::StatusOr<RangeResult> Client::GetPrefix(absl::string_view prefix, const ReadOptions& read) {
  return Range(absl::StrCat("Get prefix ", prefix), std::string(prefix), PrefixEnd(prefix), read);
}

absl::StatusOr<int64_t> Client::Put(absl::string_view key, absl::string_view value, int64_t lease) {
  pb::PutRequest req;
  req.set_key(std::string(key));
  req.set_value(std::string(value));
  req.set_lease(lease);
  pb::PutResponse resp;
  absl::Status s =
      Call(absl::StrCat("Put ", key), true, [&](Endpoint& ep, grpc::ClientContext& ctx) {
        resp.Clear();
        return ep.kv->Put(&ctx, req, &resp);
      });
  if (!s.ok()) return s;
  return resp.header().revision();
}

absl::StatusOr<int64_t> Client::DeleteRange(absl::string_view what, std::string key,
                                            std::string range_end) {
  pb::DeleteRangeRequest req;
  req.set_key(std::move(key));
  req.set_range_end(std::move(range_end));
  pb::DeleteRangeResponse resp;
  absl::Status s = Call(what, true, [&](Endpoint& ep, grpc::ClientContext& ctx) {
    resp.Clear();
    return ep.kv->DeleteRange(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp.deleted();
}

absl::StatusOr<int64_t> Client::Delete(absl::string_view key) {
  return DeleteRange(absl::StrCat("Delete ", key), std::string(key), "");
}

absl::StatusOr<int64_t> Client::DeletePrefix(absl::string_view prefix) {
  return DeleteRange(absl::StrCat("Delete prefix ", prefix), std::string(prefix),
                     PrefixEnd(prefix));
}

absl::StatusOr<TxnResult> Client::Txn(const std::vector<Compare>& compares,
                                      const std::vector<Op>& success,
                                      const std::vector<Op>& failure) {
  pb::TxnRequest req;
  for (const Compare& c : compares) *req.add_compare() = ToPb(c);
  for (const Op& op : success) *req.add_success() = ToPb(op);
  for (const Op& op : failure) *req.add_failure() = ToPb(op);
  pb::TxnResponse resp;
  std::string what = "Txn";
  if (!compares.empty()) absl::StrAppend(&what, " on ", compares.front().key);
  absl::Status s = Call(what, false, [&](Endpoint& ep, grpc::ClientContext& ctx) {
    resp.Clear();
    return ep.kv->Txn(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  TxnResult out;
  out.succeeded = resp.succeeded();
  out.revision = resp.header().revision();
  for (const auto& r : resp.responses()) out.results.push_back(FromPb(r));
  return out;
}

absl::Status Client::Compact(int64_t revision) {
  pb::CompactionRequest req;
  req.set_revision(revision);
  req.set_physical(true);
  pb::CompactionResponse resp;
  return Call(
      absl::StrCat("Compact ", revision), true,
      [&](Endpoint& ep, grpc::ClientContext& ctx) { return ep.kv->Compact(&ctx, req, &resp); });
}

absl::StatusOr<LeaseGrant> Client::GrantLease(int64_t ttl_seconds) {
  if (ttl_seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd lease: TTL ", ttl_seconds, " s must be positive"));
  }
  pb::LeaseGrantRequest req;
  req.set_ttl(ttl_seconds);
  pb::LeaseGrantResponse resp;
  // Retried after sending: a duplicate grant only leaves an unused lease
  // that expires by itself.
  absl::Status s = Call(absl::StrCat("LeaseGrant ttl=", ttl_seconds, "s"), true,
                        [&](Endpoint& ep, grpc::ClientContext& ctx) {
                          resp.Clear();
                          return ep.lease->LeaseGrant(&ctx, req, &resp);
                        });
  if (!s.ok()) return s;
  if (!resp.error().empty()) {
    return absl::InternalError(absl::StrCat("etcd LeaseGrant: ", resp.error()));
  }
  return LeaseGrant{resp.id(), resp.ttl()};
}

absl::Status Client::RevokeLease(int64_t id) {
  pb::LeaseRevokeRequest req;
  req.set_id(id);
  pb::LeaseRevokeResponse resp;
  absl::Status s = Call(absl::StrFormat("LeaseRevoke %x", id), true,
                        [&](Endpoint& ep, grpc::ClientContext& ctx) {
                          return ep.lease->LeaseRevoke(&ctx, req, &resp);
                        });
  if (s.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  return s;
}

absl::StatusOr<int64_t> Client::KeepAliveOnce(int64_t id, absl::Time deadline) {
  pb::LeaseKeepAliveRequest req;
  req.set_id(id);
  pb::LeaseKeepAliveResponse resp;
  const std::string what = absl::StrFormat("LeaseKeepAlive %x", id);
  absl::Status s = Call(
      what, true,
      [&](Endpoint& ep, grpc::ClientContext& ctx) {
        resp.Clear();
        ctx.AddMetadata("hasleader", "true");  // refuse service from a member without a leader
        auto stream = ep.lease->LeaseKeepAlive(&ctx);
        if (!stream->Write(req)) return stream->Finish();
        stream->WritesDone();
        const bool got = stream->Read(&resp);
        grpc::Status fs = stream->Finish();
        if (!fs.ok()) return fs;
        if (!got)
          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream ended without an answer");
        return grpc::Status::OK;
      },
      deadline, std::max(absl::Milliseconds(200), (deadline - absl::Now()) / 3));
  if (!s.ok()) return s;
  if (resp.ttl() <= 0) {
    return absl::NotFoundError(
        absl::StrCat("etcd ", what, ": the lease has expired or was revoked"));
  }
  return resp.ttl();
}

absl::StatusOr<int64_t> Client::LeaseTimeToLive(int64_t id) {
  pb::LeaseTimeToLiveRequest req;
  req.set_id(id);
  pb::LeaseTimeToLiveResponse resp;
  const std::string what = absl::StrFormat("LeaseTimeToLive %x", id);
  absl::Status s = Call(what, true, [&](Endpoint& ep, grpc::ClientContext& ctx) {
    resp.Clear();
    return ep.lease->LeaseTimeToLive(&ctx, req, &resp);
  });
  if (!s.ok()) return s;
  if (resp.ttl() < 0) {
    return absl::NotFoundError(absl::StrCat("etcd ", what, ": no such lease"));
  }
  return resp.ttl();
}

absl::StatusOr<MemberStatus> Client::MemberStatusOf(absl::string_view endpoint) {
  absl::StatusOr<EndpointTarget> target = ParseEndpoint(endpoint, options_.tls);
  if (!target.ok()) return target.status();
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    auto& ep = endpoints_[i];
    if (ep->name != target->host_port) continue;
    const absl::Time deadline = absl::Now() + options_.attempt_timeout;
    if (!WaitConnected(*ep->channel, std::min(deadline, absl::Now() + options_.connect_timeout))) {
      return absl::UnavailableError(
          absl::StrCat("etcd Status via ", ep->name, ": ", ConnectProblem(*ep)));
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(ToChrono(deadline));
    if (auto token = Authorize(i, ctx, deadline); !token.ok()) return token.status();
    pb::StatusResponse resp;
    grpc::Status s = ep->maintenance->Status(&ctx, pb::StatusRequest(), &resp);
    if (!s.ok()) return FromGrpc(s, "Status", ep->name);
    MemberStatus out;
    out.endpoint = ep->name;
    out.version = resp.version();
    out.member_id = resp.header().member_id();
    out.leader_id = resp.leader();
    out.raft_term = resp.raft_term();
    out.revision = resp.header().revision();
    out.errors.assign(resp.errors().begin(), resp.errors().end());
    return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("etcd Status: ", endpoint, " is not one of the client's endpoints"));
}

absl::Status Client::Health() {
  std::vector<std::string> problems;
  for (const std::string& url : options_.endpoints) {
    absl::StatusOr<MemberStatus> st = MemberStatusOf(url);
    if (!st.ok()) {
      problems.push_back(std::string(st.status().message()));
    } else if (st->leader_id == 0) {
      problems.push_back(absl::StrCat(st->endpoint, ": no leader"));
    } else if (!st->errors.empty()) {
      problems.push_back(absl::StrCat(st->endpoint, ": ", absl::StrJoin(st->errors, ", ")));
    } else {
      return absl::OkStatus();
    }
  }
  return absl::UnavailableError(
      absl::StrCat("etcd: no healthy member (", absl::StrJoin(problems, "; "), ")"));
}

absl::StatusOr<std::unique_ptr<Watch>> Client::StartWatch(
    const WatchSpec& spec, std::function<void(const WatchUpdate&)> callback) {
  int64_t start = spec.start_revision;
  if (start <= 0) {
    // Pin "now" to a revision so that a reconnect before the first event
    // cannot skip changes made in between.
    ReadOptions read;
    read.limit = 1;
    read.keys_only = true;
    absl::StatusOr<RangeResult> r = Get(spec.key, read);
    if (!r.ok()) return r.status();
    start = r->revision + 1;
  }
  return std::unique_ptr<Watch>(new Watch(*this, spec, start, std::move(callback)));
}

// ---- authentication and connection problems ---------------------------------

absl::StatusOr<std::string> Client::Token(Endpoint& ep, absl::Time deadline) {
  if (options_.username.empty()) return std::string();
  {
    std::lock_guard<std::mutex> lock(token_mu_);
    if (!token_.empty()) return token_;
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(ToChrono(deadline));
  pb::AuthenticateRequest req;
  req.set_name(options_.username);
  req.set_password(options_.password);
  pb::AuthenticateResponse resp;
  const grpc::Status s = ep.auth->Authenticate(&ctx, req, &resp);
  if (!s.ok()) {
    absl::Status out =
        FromGrpc(s, absl::StrCat("Authenticate as user \"", options_.username, "\""), ep.name);
    if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
        s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      // "authentication failed, invalid user ID or password" /
      // "authentication is not enabled": the configuration, not the member.
      return absl::PermissionDeniedError(out.message());
    }
    return out;
  }
  std::lock_guard<std::mutex> lock(token_mu_);
  token_ = resp.token();
  return token_;
}

void Client::DropToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(token_mu_);
  if (token_ == token) token_.clear();
}

absl::StatusOr<std::string> Client::Authorize(size_t i, grpc::ClientContext& ctx,
                                              absl::Time deadline) {
  absl::StatusOr<std::string> token = Token(*endpoints_[i % endpoints_.size()], deadline);
  if (token.ok() && !token->empty()) ctx.AddMetadata("token", *token);
  return token;
}

std::string Client::ConnectProblem(Endpoint& ep) {
  // A call that does not wait for the connection fails at once with the
  // channel's last error: a TLS handshake failure names its reason there.
  grpc::ClientContext ctx;
  ctx.set_wait_for_ready(false);
  ctx.set_deadline(ToChrono(absl::Now() + absl::Milliseconds(200)));
  pb::StatusResponse resp;
  const grpc::Status s = ep.maintenance->Status(&ctx, pb::StatusRequest(), &resp);
  if (s.ok() || s.error_message().empty()) return "cannot connect";
  std::string out = absl::StrCat("cannot connect: ", s.error_message());
  if (ep.tls && !absl::StrContains(s.error_message(), "handshake")) {
    // A member that refuses the client's certificate (none, or not from
    // the CA it trusts) just closes the connection.
    absl::StrAppend(&out,
                    " (TLS: the member may have refused this client's certificate: "
                    "none, or not from the CA it trusts)");
  }
  return out;
}

}  // namespace ballast::etcd
