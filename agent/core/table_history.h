// Table history: the inputs of the Maglev tables a VIP had before its
// current one, kept in the replicated state (v1::State.table_history), and
// the per-slot history the data plane reads (`maglev_history`) derived from
// them. Established second chance (docs/dataplane.md) walks a slot's
// previous backends when a connection that ECMP moved to another router
// finds that the slot's current backend does not hold it; every router
// derives the same history from the same state.
//
// What is kept per VIP: the last kTableVersions versions (a version: the
// table size and the (address, effective weight) set of a table the VIP
// had), plus, for each backend draining now, the newest version in which
// it still had weight, so its connections stay reachable from any router
// until its deadline. A change of table size clears the history (slots of
// tables of two sizes do not correspond).
//
// Pure functions; thread-safety: values.
#ifndef BALLAST_AGENT_CORE_TABLE_HISTORY_H_
#define BALLAST_AGENT_CORE_TABLE_HISTORY_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/core/image.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::core {

inline constexpr size_t kTableVersions = 4;

// Records in `next` what a commit changes: for each VIP of `after` (only
// those in `scope` when it is not null) whose table inputs differ from
// those of the same VIP in `before`, `before`'s inputs become its most
// recent version (replaced at `now_unix_ms`), and its versions are pruned
// (above). Drops the history of VIPs `next` no longer has. Returns the VIPs
// whose history changed.
std::set<dataplane::VipKey> RecordTableChanges(const Image& before, const Image& after,
                                               const std::set<dataplane::VipKey>* scope,
                                               int64_t now_unix_ms, v1::State* next);

// The history of `key` in `state`, or nullptr.
const v1::TableHistory* FindTableHistory(const v1::State& state, const v1::VipKey& key);

// The versions of `history` that a table of `table_size` slots can use, as
// Maglev inputs (most recent first): a backend's id from `ids_by_address`
// (the VIP's backends now), or BALLAST_INVALID_ID for one no longer
// configured (it held slots, but no connection can be sent to it).
std::vector<std::vector<maglev::Backend>> HistoryInputs(
    const v1::TableHistory& history, uint32_t table_size,
    const std::map<std::string, uint32_t>& ids_by_address);

// The per-slot history of `current`: for each slot, up to
// BALLAST_HISTORY_DEPTH backend ids that `previous` (tables of the same
// size, most recent first) gave it, most recent first, without repeats,
// without the slot's current backend and without 0 (none, or a backend no
// longer configured), packed as a `maglev_history` entry (16 bits each).
std::vector<uint64_t> SlotHistory(std::span<const uint32_t> current,
                                  std::span<const std::vector<uint32_t>> previous);

// The slot history of `vip` (its history inputs) for its current `table`;
// empty when it has no versions. An error when a version's table cannot be
// built.
absl::StatusOr<std::vector<uint64_t>> BuildSlotHistoryOf(const VipImage& vip,
                                                         std::span<const uint32_t> table);

// A hash of a slot history (0 for none).
size_t SlotHistoryHash(std::span<const uint64_t> history);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_TABLE_HISTORY_H_
