// The embedded state store of a standalone router: one file holding the
// agent's v1::State, replaced atomically.
//
// File format (version 1), little-endian:
//   bytes 0..7    magic "BALLASTS"
//   bytes 8..11   format version, 1
//   bytes 12..15  CRC-32C of the payload
//   bytes 16..23  payload length
//   bytes 24..    payload: v1::State in protobuf binary
// `lbagent --dump-state FILE` prints it in protobuf text format.
//
// Save() writes <file>.tmp, fsyncs it, renames it over <file> and fsyncs the
// directory, so a crash (kill -9, power loss) at any moment leaves either the
// old or the new state, never a mix. Load() never "repairs": a file that is
// truncated, has a bad checksum or does not parse is DataLoss, and the agent
// refuses to start rather than silently forgetting its state.
//
// Thread-safety: none; the Engine serializes calls. Two StateStores must not
// write the same file (lbagent holds one).
#ifndef BALLAST_AGENT_CORE_STATE_STORE_H_
#define BALLAST_AGENT_CORE_STATE_STORE_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ballast/v1/agent.pb.h"
#include "absl/strings/string_view.h"

namespace ballast::core {

class StateStore {
 public:
  explicit StateStore(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }

  // NotFound: no file (first start). DataLoss: the file exists but is not a
  // complete, intact state (the message names the file and the problem).
  // Other codes: the file could not be read (errno text).
  absl::StatusOr<v1::State> Load() const;

  // Atomically replaces the file with `state`. Creates the parent directory
  // (mode 0750) if it is missing. On error the previous file is intact.
  absl::Status Save(const v1::State& state);

  // The file's bytes for `state`, and back (for tests and --dump-state).
  static std::string Encode(const v1::State& state);
  static absl::StatusOr<v1::State> Decode(absl::string_view bytes, absl::string_view what);

 private:
  std::string path_;
};

// CRC-32C (Castagnoli) of `data`.
uint32_t Crc32c(absl::string_view data);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_STATE_STORE_H_
