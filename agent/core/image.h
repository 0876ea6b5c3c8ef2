// The data-plane image: what the BPF maps must hold for a given State.
//
// The engine never edits maps ad hoc. It computes the image of the state it
// wants (BuildImage), compares it with the image of what the maps hold (the
// image it programmed last, or ReadImage() of the maps at start-up), and
// writes only the difference. This is also how a restarted agent adopts the
// pinned maps: same state, same ids, same tables -> nothing is rewritten.
//
// Tables are not kept in an image (100 VIPs x 65537 slots would be 25 MiB);
// an image keeps each table's inputs, a hash of its contents and the slot
// count per backend. BuildImage() returns the tables it had to build.
//
// Effective weight of a backend = 0 when it is draining, evicted or pinned;
// else its nominal weight scaled by health checking's mark when it has one
// (HealthMark: in service, ramp percent, weight score; agent/health/weight.h),
// else the nominal weight. Map state: active -> ACTIVE (also a backend health
// checking demoted: weight 0, its established flows stay); draining ->
// DRAINING with the deadline; evicted or pinned -> EVICTED (flows move).
//
// Pure functions (no I/O) except ReadImage(), which reads the maps. Thread
// safety: values; ReadImage() follows Dataplane's one-thread rule.
#ifndef BALLAST_AGENT_CORE_IMAGE_H_
#define BALLAST_AGENT_CORE_IMAGE_H_

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/core/quic_ids.h"
#include "agent/dataplane/port.h"
#include "agent/maglev/maglev.h"
#include "ballast/v1/agent.pb.h"
#include "absl/strings/string_view.h"

namespace ballast::core {

// An operator-visible backend mode, derived from the state's overrides.
enum class BackendMode { kActive, kDraining, kEvicted, kPinned };
absl::string_view BackendModeName(BackendMode m);  // active | draining | evicted | pinned

struct BackendView {
  BackendMode mode = BackendMode::kActive;
  uint32_t nominal_weight = 0;
  uint32_t effective_weight = 0;
  int64_t drain_deadline_unix_ms = 0;  // draining (and evicted: when it was due)
};

// The view of `backend` of `vip` in `state` (overrides matched by key).
BackendView ViewOf(const v1::State& state, const v1::VipKey& vip, const v1::Backend& backend);
// The view of `backend` given its override (nullptr = none).
BackendView ViewFromOverride(const v1::BackendOverride* o, const v1::Backend& backend);
// The override of a backend, or nullptr.
const v1::BackendOverride* FindOverride(const v1::State& state, const v1::VipKey& vip,
                                        const std::string& address);

struct BackendImage {
  IpAddress addr;
  ballast_backend_state state = BALLAST_BACKEND_ACTIVE;
  int64_t drain_deadline_unix_ms = 0;  // DRAINING only, else 0
  bool operator==(const BackendImage&) const = default;
};

struct VipImage {
  dataplane::VipKey key;
  uint32_t vip_id = 0;
  uint32_t table_size = 0;
  std::vector<maglev::Backend> inputs;  // effective weights, sorted by key
  size_t table_hash = 0;                // TableHash() of the table's contents
  std::map<uint32_t, uint32_t> slots;   // backend id -> slots it holds
  bool active_standby = false;          // Vip.ownership ACTIVE_STANDBY (not read back)
  bool gue = false;                     // Vip.mode GUE (BALLAST_VIP_F_GUE)
  QuicImage quic;                       // QUIC-LB (quic_ids.h); empty: not a QUIC VIP
  // Established second chance (table_history.h): the inputs of the VIP's
  // earlier tables of this size, most recent first, and a hash of the slot
  // history derived from them (0 = none; read back from the maps too).
  std::vector<std::vector<maglev::Backend>> history;
  size_t history_hash = 0;
};

struct Image {
  dataplane::Settings settings;
  std::string interface;                   // where the program must be attached ("" = nowhere)
  std::set<std::string> extra_interfaces;  // where else (Global.extra_interfaces)
  std::map<dataplane::VipKey, VipImage> vips;
  std::map<uint32_t, BackendImage> backends;
  std::set<IpAddress> vip_addresses;  // one BALLAST_VIP_ADDR_MARKER entry each
};

struct BuiltImage {
  Image image;
  // vip_id -> table, for the VIPs whose table inputs differ from those of
  // the same vip_id in `previous` (all VIPs when previous is null), when
  // BuildImage() was asked to keep them. Program a VIP whose table is not
  // here with BuildTableOf(its VipImage).
  std::map<uint32_t, std::vector<uint32_t>> tables;
  // vip_id -> slot history (table_history.h; empty = none), for the VIPs
  // whose history hash differs from `previous`'s, when tables are kept.
  // Program a VIP whose history is not here with BuildHistoryOf().
  std::map<uint32_t, std::vector<uint64_t>> histories;
};

size_t TableHash(std::span<const uint32_t> table);

dataplane::Settings SettingsOf(const v1::Global& global);

// The image of a validated state whose ids are assigned (AssignIds).
// `only_vips`: a DELTA for a change confined
// to these VIPs (added, changed or deleted): the image of just these VIPs
// (those still configured) and their backends, plus settings and interface.
// ApplyDelta() of it onto the image before the change equals a full build.
// `previous`: the image the maps hold; a VIP whose table inputs are the same
// as there keeps its table (not rebuilt). `keep_tables` false: tables are
// built (for their hash and slot counts) but not kept, so that building the
// image of many VIPs holds one table at a time (start-up).
absl::StatusOr<BuiltImage> BuildImage(const v1::State& state, const Image* previous,
                                      const std::set<dataplane::VipKey>* only_vips = nullptr,
                                      bool keep_tables = true);

// Replaces the VIPs in `scope` (and their backends) of `image` with those of
// `delta` (a BuildImage() delta for the same scope), and takes its settings.
void ApplyDelta(const Image& delta, const std::set<dataplane::VipKey>& scope, Image* image);

// The Maglev table of a VIP image (deterministic: the same as BuildImage built).
absl::StatusOr<std::vector<uint32_t>> BuildTableOf(const VipImage& vip);

// The slot history of a VIP image (its table built again; empty = none).
absl::StatusOr<std::vector<uint64_t>> BuildHistoryOf(const VipImage& vip);

// Builds again the history of the VIPs `keys` of `built` (a BuildImage()
// of `state` that kept its tables) from `state`'s table history, after
// RecordTableChanges() changed it.
absl::Status RefreshHistories(const v1::State& state, const std::set<dataplane::VipKey>& keys,
                              BuiltImage* built);

// What the maps hold now (VIPs, markers, backends, tables' hashes, settings).
// `now_unix_ms`/`now_mono_ns` convert the maps' monotonic drain deadlines to
// unix ms (same conversion as the engine's programming, inverted).
absl::StatusOr<Image> ReadImage(const dataplane::DataplanePort& dp, int64_t now_unix_ms,
                                uint64_t now_mono_ns);

// A deterministic multi-line description of an image (for tests and logs):
// settings, VIPs with ids, table sizes, GUE mode and slot
// counts, backends with states, markers. Table hashes are not included
// (they are per process); slot counts per backend stand for the contents.
std::string DescribeImage(const Image& image);

// The monotonic deadline for a unix-ms deadline, relative to the two "now"s.
uint64_t ToMonotonicNs(int64_t deadline_unix_ms, int64_t now_unix_ms, uint64_t now_mono_ns);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_IMAGE_H_
