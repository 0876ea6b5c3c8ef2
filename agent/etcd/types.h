// Plain values of the etcd client: keys, events, transaction predicates and
// operations, results. Copyable, no I/O; the client converts them to and from
// etcd's wire messages.
#ifndef BALLAST_AGENT_ETCD_TYPES_H_
#define BALLAST_AGENT_ETCD_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ballast::etcd {

// One key at one revision. A missing key has every revision 0.
struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;  // revision that created the key
  int64_t mod_revision = 0;     // revision of its last change
  int64_t version = 0;          // changes since creation (1 after creation)
  int64_t lease = 0;            // 0: not attached to a lease
};

struct Event {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  // After the change. For kDelete: key and mod_revision (the deleting
  // revision) only.
  KeyValue kv;
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;  // store revision the read was served at
  bool more = false;     // `limit` cut the result short
};

struct ReadOptions {
  int64_t revision = 0;       // 0: latest
  int64_t limit = 0;          // 0: no limit
  bool serializable = false;  // served by the contacted member alone (may be stale)
  bool keys_only = false;
};

// The end of the key range holding every key that starts with `prefix`
// (etcd's range_end convention; "\0" for an empty prefix: every key).
std::string PrefixEnd(absl::string_view prefix);

// One predicate of a transaction, on one key.
struct Compare {
  enum class Target { kValue, kVersion, kCreateRevision, kModRevision, kLease };
  enum class Result { kEqual, kNotEqual, kGreater, kLess };
  Target target = Target::kValue;
  Result result = Result::kEqual;
  std::string key;
  std::string value;   // for kValue
  int64_t number = 0;  // for the others

  static Compare Value(absl::string_view key, Result r, absl::string_view value);
  static Compare Version(absl::string_view key, Result r, int64_t version);
  static Compare CreateRevision(absl::string_view key, Result r, int64_t revision);
  static Compare ModRevision(absl::string_view key, Result r, int64_t revision);
  static Compare Lease(absl::string_view key, Result r, int64_t lease);
  // The key does not exist (create_revision == 0).
  static Compare Missing(absl::string_view key) { return CreateRevision(key, Result::kEqual, 0); }
};

// One operation of a transaction.
struct Op {
  enum class Type { kGet, kPut, kDelete };
  Type type = Type::kGet;
  std::string key;
  std::string range_end;  // empty: the key alone
  std::string value;      // kPut
  int64_t lease = 0;      // kPut

  static Op Get(absl::string_view key);
  static Op GetPrefix(absl::string_view prefix);
  static Op Put(absl::string_view key, absl::string_view value, int64_t lease = 0);
  static Op Delete(absl::string_view key);
  static Op DeletePrefix(absl::string_view prefix);
};

// The outcome of one Op, in the order of the branch that ran.
struct OpResult {
  Op::Type type = Op::Type::kGet;
  std::vector<KeyValue> kvs;  // kGet
  int64_t deleted = 0;        // kDelete
};

struct TxnResult {
  bool succeeded = false;  // the compares held and `success` ran
  int64_t revision = 0;    // store revision after the transaction
  std::vector<OpResult> results;
};

struct WatchSpec {
  std::string key;
  bool prefix = false;         // every key under `key`
  int64_t start_revision = 0;  // first revision to deliver; 0: now
};

}  // namespace ballast::etcd

#endif  // BALLAST_AGENT_ETCD_TYPES_H_
