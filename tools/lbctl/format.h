// Human-readable output of lbctl (the default; --json prints the API
// messages instead). Every function returns complete lines ending in '\n'.
// `now` is passed in so output is reproducible in tests.
#ifndef BALLAST_TOOLS_LBCTL_FORMAT_H_
#define BALLAST_TOOLS_LBCTL_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ballast/v1/api.pb.h"

namespace google::protobuf {
class Message;
}

namespace ballast::lbctl {

// Left-aligned text columns, right-aligned numbers, two spaces apart.
class Table {
 public:
  explicit Table(std::vector<std::string> header, std::string indent = "");
  // `numeric[i]` right-aligns column i.
  void SetNumeric(std::vector<bool> numeric) { numeric_ = std::move(numeric); }
  void AddRow(std::vector<std::string> row);
  std::string Render() const;

 private:
  std::string indent_;
  std::vector<std::string> header_;
  std::vector<bool> numeric_;
  std::vector<std::vector<std::string>> rows_;
};

// Exact below 100000, then k, M, G, T with one decimal: 123456 -> "123.5k",
// 7300000 -> "7.3M".
std::string Compact(uint64_t n);

// Per VIP: a header line, then one row per backend (address, state,
// nominal and effective weight, share of table slots, flows, new flows,
// packets, SYN retransmits, client RSTs, mean handshake ms, score).
std::string FormatStatus(const v1::StatusResponse& status, absl::Time now);
std::string FormatVips(const v1::ListVipsResponse& vips);
// `lbctl flows`: one row per flow, then how many matched and were read.
std::string FormatFlows(const v1::VipKey& vip, const v1::ListFlowsResponse& flows);
std::string FormatAudit(const v1::QueryAuditResponse& audit);
// The summary of a period's audit records (`lbctl digest`): automated and
// operator actions by kind, the backends acted on most, pins, freezes and
// disagreement alerts (each listed), rejected requests.
std::string FormatDigest(const v1::QueryAuditResponse& audit, absl::Duration period,
                         absl::Time now);
std::string FormatEvent(const v1::Event& event);
std::string FormatApply(const v1::ApplyConfigResponse& resp, bool dry_run);
// `lbctl config diff` (no file): the nodes and their differences.
std::string FormatConfigDiff(const v1::ConfigDiffResponse& resp);

// Protobuf's JSON mapping; `pretty` adds newlines and indentation. Fields
// with default values are printed too, so scripts see every field.
absl::StatusOr<std::string> ToJson(const google::protobuf::Message& msg, bool pretty);

}  // namespace ballast::lbctl

#endif  // BALLAST_TOOLS_LBCTL_FORMAT_H_
