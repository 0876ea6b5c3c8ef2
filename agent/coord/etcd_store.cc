#include "agent/coord/etcd_store.h"

#include <fcntl.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/coord/hash.h"
#include "agent/core/file_util.h"
#include "agent/core/log.h"

namespace ballast::coord {

using core::Log;
using core::LogLevel;

bool IsUnreachable(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable ||
         s.code() == absl::StatusCode::kDeadlineExceeded;
}

namespace {

absl::Status Unreachable(const absl::Status& s, absl::string_view what) {
  return absl::UnavailableError(
      absl::StrCat("etcd unreachable (", what, "): ", s.message(),
                   " — the replicated state cannot change now; this node keeps forwarding on "
                   "its last known state"));
}

}  // namespace

EtcdStore::EtcdStore(etcd::Client& client, EtcdStoreOptions options)
    : client_(client), options_(std::move(options)) {}

std::string EtcdStore::Describe() const {
  return absl::StrCat("etcd key ", state_key(), " (cache ", options_.cache_file, ")");
}

absl::StatusOr<StoredState> EtcdStore::ReadCache(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat("no state cache at ", path));
    return core::ErrnoStatus(err, absl::StrCat("reading the state cache ", path));
  }
  std::stringstream ss;
  ss << f.rdbuf();
  v1::StateCache cache;
  if (!google::protobuf::TextFormat::ParseFromString(ss.str(), &cache)) {
    return absl::DataLossError(absl::StrCat("state cache ", path,
                                            " does not parse as ballast.v1.StateCache; refusing "
                                            "to use it"));
  }
  const std::string have = StateHash(cache.state());
  if (cache.sha256() != have) {
    return absl::DataLossError(absl::StrCat(
        "state cache ", path, " was modified after ballast wrote it (its content hashes to ", have,
        ", the cache records ", cache.sha256(),
        "): a local copy never becomes effective config; refusing to use it. The state lives in "
        "etcd: start this node when etcd is reachable (it then rewrites the cache)"));
  }
  return StoredState{cache.state(), cache.revision(), "cache"};
}

absl::Status EtcdStore::WriteCache(const std::string& path, const v1::State& state,
                                   int64_t revision) {
  v1::StateCache cache;
  cache.set_revision(revision);
  cache.set_sha256(StateHash(state));
  cache.set_written_unix_ms(absl::ToUnixMillis(absl::Now()));
  *cache.mutable_state() = state;
  std::string text =
      "# ballast state cache (cluster mode): the last state read from etcd. Not config:\n"
      "# edits are detected (sha256) and the file is then refused.\n";
  std::string body;
  google::protobuf::TextFormat::PrintToString(cache, &body);
  text += body;
  if (auto s = core::MakeDirs(core::DirOf(path)); !s.ok()) return s;
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return core::ErrnoStatus(errno, absl::StrCat("creating ", tmp));
  absl::Status s = core::WriteAll(fd, text, tmp);
  if (s.ok() && fsync(fd) != 0) s = core::ErrnoStatus(errno, absl::StrCat("fsync ", tmp));
  close(fd);
  if (s.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    s = core::ErrnoStatus(errno, absl::StrCat("renaming ", tmp, " to ", path));
  }
  if (!s.ok()) unlink(tmp.c_str());
  return s;
}

void EtcdStore::Cache(const v1::State& state, int64_t revision) {
  if (auto s = WriteCache(options_.cache_file, state, revision); !s.ok()) {
    Log(LogLevel::kWarning, "writing the state cache failed",
        {{"file", options_.cache_file}, {"error", std::string(s.message())}});
  }
}

absl::StatusOr<StoredState> EtcdStore::Load() {
  auto got = client_.Get(state_key());
  if (got.ok()) {
    if (got->kvs.empty()) {
      return absl::NotFoundError(absl::StrCat("etcd has no ", state_key(), " yet"));
    }
    StoredState out;
    if (!out.state.ParseFromString(got->kvs[0].value)) {
      return absl::DataLossError(absl::StrCat("etcd key ", state_key(), " at revision ",
                                              got->kvs[0].mod_revision,
                                              " does not hold a ballast.v1.State"));
    }
    out.revision = got->kvs[0].mod_revision;
    out.source = "etcd";
    Cache(out.state, out.revision);
    return out;
  }
  if (!IsUnreachable(got.status())) return got.status();
  auto cached = ReadCache(options_.cache_file);
  if (cached.ok()) {
    Log(LogLevel::kWarning,
        "etcd unreachable: starting from the state cache (frozen until etcd "
        "is back)",
        {{"cache", options_.cache_file},
         {"revision", cached->revision},
         {"error", std::string(got.status().message())}});
    return cached;
  }
  if (cached.status().code() == absl::StatusCode::kNotFound) {
    return absl::UnavailableError(absl::StrCat("etcd unreachable (", got.status().message(),
                                               ") and no state cache at ", options_.cache_file,
                                               ": nothing to start from"));
  }
  return cached.status();  // DataLoss: edited or corrupt, refused loudly
}

absl::StatusOr<int64_t> EtcdStore::Save(const v1::State& next, int64_t base_revision,
                                        WriteKind kind) {
  const std::string key = state_key();
  const std::string bytes = DeterministicBytes(next);
  if (bytes.size() > options_.max_state_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the replicated state would be ", bytes.size(), " bytes, over the ",
        options_.max_state_bytes, " that fit in one etcd request (etcd's --max-request-bytes, ",
        "1572864 by default, less room for the transaction); nothing was written: remove VIPs "
        "or backends, or raise etcd's limit"));
  }
  std::vector<etcd::Compare> compares;
  if (base_revision == 0) {
    compares.push_back(etcd::Compare::Missing(key));
  } else {
    compares.push_back(
        etcd::Compare::ModRevision(key, etcd::Compare::Result::kEqual, base_revision));
  }
  absl::StatusOr<etcd::TxnResult> r;
  if (kind == WriteKind::kAutomation) {
    std::optional<etcd::Fence> fence = this->fence();
    if (!fence.has_value()) {
      return absl::FailedPreconditionError(
          "not the leader: only the cluster's leader writes automated decisions");
    }
    r = etcd::FencedTxn(client_, *fence, compares, {etcd::Op::Put(key, bytes)});
    if (!r.ok() && etcd::IsFenced(r.status())) {
      SetFence(std::nullopt);
      if (options_.on_fenced) options_.on_fenced(r.status());
      return r.status();
    }
  } else {
    r = client_.Txn(compares, {etcd::Op::Put(key, bytes)}, {etcd::Op::Get(key)});
  }
  if (!r.ok()) {
    if (IsUnreachable(r.status())) return Unreachable(r.status(), "writing the state");
    return r.status();
  }
  if (!r->succeeded) {
    int64_t now = 0;
    if (!r->results.empty() && !r->results[0].kvs.empty()) now = r->results[0].kvs[0].mod_revision;
    return absl::AbortedError(
        absl::StrCat("the replicated state changed concurrently (", key, " is at revision ",
                     now == 0 ? std::string("unknown") : absl::StrCat(now),
                     ", this change was made on ", base_revision, "); re-read and retry"));
  }
  Cache(next, r->revision);
  return r->revision;
}

void EtcdStore::Adopted(const v1::State& state, int64_t revision) { Cache(state, revision); }

void EtcdStore::SetFence(std::optional<etcd::Fence> fence) {
  std::lock_guard<std::mutex> lock(mu_);
  fence_ = std::move(fence);
}

std::optional<etcd::Fence> EtcdStore::fence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fence_;
}

}  // namespace ballast::coord
