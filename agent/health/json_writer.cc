#include "agent/health/json_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::health {

std::string JsonString(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

void JsonObject::Key(std::string_view key) {
  if (!body_.empty()) body_.push_back(',');
  body_ += JsonString(key);
  body_.push_back(':');
}

JsonObject& JsonObject::String(std::string_view key, std::string_view value) {
  Key(key);
  body_ += JsonString(value);
  return *this;
}

JsonObject& JsonObject::Int(std::string_view key, int64_t value) {
  Key(key);
  absl::StrAppend(&body_, value);
  return *this;
}

JsonObject& JsonObject::Uint(std::string_view key, uint64_t value) {
  Key(key);
  absl::StrAppend(&body_, value);
  return *this;
}

JsonObject& JsonObject::Double(std::string_view key, double value) {
  Key(key);
  if (std::isfinite(value)) {
    body_ += absl::StrFormat("%.6g", value);
  } else {
    body_ += "null";
  }
  return *this;
}

JsonObject& JsonObject::Bool(std::string_view key, bool value) {
  Key(key);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::Null(std::string_view key) {
  Key(key);
  body_ += "null";
  return *this;
}

JsonObject& JsonObject::Raw(std::string_view key, std::string_view json) {
  Key(key);
  body_ += json;
  return *this;
}

JsonObject& JsonObject::Object(std::string_view key, const JsonObject& value) {
  return Raw(key, value.Build());
}

JsonObject& JsonObject::Strings(std::string_view key, const std::vector<std::string>& values) {
  Key(key);
  body_.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) body_.push_back(',');
    body_ += JsonString(values[i]);
  }
  body_.push_back(']');
  return *this;
}

std::string JsonObject::Build() const { return absl::StrCat("{", body_, "}"); }

}  // namespace ballast::health
