// Status propagation for functions that return absl::Status or
// absl::StatusOr<T>. Header-only.
#ifndef BALLAST_AGENT_BASE_STATUS_MACROS_H_
#define BALLAST_AGENT_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status of `expr` (an absl::Status) when it is not OK.
#define BALLAST_RETURN_IF_ERROR(expr)                         \
  do {                                                        \
    if (absl::Status ballast_s_ = (expr); !ballast_s_.ok()) { \
      return ballast_s_;                                      \
    }                                                         \
  } while (0)

// Declares `lhs` as a reference to the value of `expr` (an absl::StatusOr),
// or returns its status when it is not OK.
#define BALLAST_ASSIGN_OR_RETURN(lhs, expr)     \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto& lhs = *lhs##_or

#endif  // BALLAST_AGENT_BASE_STATUS_MACROS_H_
