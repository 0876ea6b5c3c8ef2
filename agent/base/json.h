// Minimal JSON text helpers for the agent's logs and audit records.
//
// Pure functions, thread-safe. Output is always valid JSON text (RFC 8259):
// strings are escaped, control characters become \u00XX, and bytes that are
// not valid UTF-8 are replaced by U+FFFD so a log line never breaks a parser.
#ifndef BALLAST_AGENT_CORE_JSON_H_
#define BALLAST_AGENT_CORE_JSON_H_

#include <string>
#include <string_view>
#include "absl/strings/string_view.h"

namespace ballast::core {

// `s` as a quoted JSON string, e.g. a"b -> "a\"b".
std::string JsonQuote(absl::string_view s);

// Appends JsonQuote(s) to *out.
void JsonAppendQuoted(std::string* out, absl::string_view s);

// RFC 3339 UTC timestamp with milliseconds, e.g. "2026-11-29T18:04:12.345Z".
std::string Rfc3339Ms(int64_t unix_ms);

}  // namespace ballast::core

#endif  // BALLAST_AGENT_CORE_JSON_H_
