// The one JSON writer of the agent: quoted strings and an object builder
// for logs, audit inputs and health evidence.
//
// Pure functions and a value type; thread-compatible. Output is always valid
// JSON text (RFC 8259): strings are escaped, control characters become
// \u00XX, and bytes that are not valid UTF-8 are replaced by U+FFFD so a log
// line never breaks a parser. Non-finite doubles become null; keys are
// written in the order they were added (no duplicate check).
#ifndef BALLAST_AGENT_BASE_JSON_H_
#define BALLAST_AGENT_BASE_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"

namespace ballast::base {

// `s` as a quoted JSON string, e.g. a"b -> "a\"b".
std::string JsonQuote(absl::string_view s);

// Appends JsonQuote(s) to *out.
void JsonAppendQuoted(std::string* out, absl::string_view s);

// RFC 3339 UTC timestamp with milliseconds, e.g. "2026-11-29T18:04:12.345Z".
std::string Rfc3339Ms(int64_t unix_ms);

// An object built key by key, e.g. {"score":62,"state":"degraded"}.
class JsonObject {
 public:
  JsonObject& String(std::string_view key, std::string_view value);
  JsonObject& Int(std::string_view key, int64_t value);
  JsonObject& Uint(std::string_view key, uint64_t value);
  // Up to 6 significant digits ("%.6g"), e.g. 0.0234, 3, 12.5.
  JsonObject& Double(std::string_view key, double value);
  JsonObject& Bool(std::string_view key, bool value);
  JsonObject& Null(std::string_view key);
  // `json` must already be valid JSON text (an object, array or scalar).
  JsonObject& Raw(std::string_view key, std::string_view json);
  JsonObject& Object(std::string_view key, const JsonObject& value);
  JsonObject& Strings(std::string_view key, const std::vector<std::string>& values);

  bool empty() const { return body_.empty(); }
  std::string Build() const;

 private:
  void Key(std::string_view key);
  std::string body_;
};

}  // namespace ballast::base

#endif  // BALLAST_AGENT_BASE_JSON_H_
