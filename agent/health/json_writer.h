// A tiny JSON object builder for the evidence attached to health actions.
//
// The health library depends only on Abseil and the standard library, so it
// does not use the core's JSON helpers. Output is valid JSON text: strings are
// escaped (quote, backslash, control characters as \u00XX; other bytes are
// copied as they are, the caller passes UTF-8), non-finite doubles become
// null, keys are written in the order they were added (no duplicate check).
// Value type; thread-compatible.
#ifndef BALLAST_AGENT_HEALTH_JSON_WRITER_H_
#define BALLAST_AGENT_HEALTH_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ballast::health {

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
  // The object as text, e.g. {"score":62,"state":"degraded"}.
  std::string Build() const;

 private:
  void Key(std::string_view key);
  std::string body_;
};

// `s` as a quoted JSON string.
std::string JsonString(std::string_view s);

}  // namespace ballast::health

#endif  // BALLAST_AGENT_HEALTH_JSON_WRITER_H_
