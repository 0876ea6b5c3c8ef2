// Content hashes that every node computes the same way: SHA-256 (hex) of the
// deterministic protobuf encoding of the state, and of a Maglev table's
// backend ids as programmed (little-endian u32 each).
#ifndef BALLAST_AGENT_COORD_HASH_H_
#define BALLAST_AGENT_COORD_HASH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "ballast/v1/agent.pb.h"

namespace ballast::coord {

std::string Sha256Hex(absl::string_view data);
// The deterministic binary encoding (map entries in key order).
std::string DeterministicBytes(const google::protobuf::Message& m);
std::string StateHash(const v1::State& state);
std::string TableHash(const std::vector<uint32_t>& table);

}  // namespace ballast::coord

#endif  // BALLAST_AGENT_COORD_HASH_H_
