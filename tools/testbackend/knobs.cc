#include "tools/testbackend/knobs.h"

#include <charconv>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ballast::testbackend {
namespace {

absl::Status ParseBool(absl::string_view key, absl::string_view value, bool* out) {
  std::string v = absl::AsciiStrToLower(value);
  if (v == "true" || v == "1" || v == "on" || v == "yes") {
    *out = true;
  } else if (v == "false" || v == "0" || v == "off" || v == "no") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("knob ", key, ": '", value, "' is not a boolean (true/false/1/0/on/off)"));
  }
  return absl::OkStatus();
}

absl::Status ParseMs(absl::string_view key, absl::string_view value, int64_t* out) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < 0 || v > kMaxDelayMs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knob ", key, ": '", value, "' is not a whole number of milliseconds 0..", kMaxDelayMs));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status ParseRate(absl::string_view key, absl::string_view value, double* out) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v) || v < 0 || v > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("knob ", key, ": '", value, "' is not a rate 0..1 (e.g. 0.25)"));
  }
  *out = v;
  return absl::OkStatus();
}

}  // namespace

bool Knobs::AnyFault() const {
  return delay_ms > 0 || delay_jitter_ms > 0 || error_rate > 0 || reset_rate > 0 || hang ||
         wrong_body;
}

absl::Status ApplyKnob(Knobs* knobs, absl::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", assignment, "' is not key=value (e.g. delay_ms=200)"));
  }
  absl::string_view key = assignment.substr(0, eq);
  absl::string_view value = assignment.substr(eq + 1);
  Knobs next = *knobs;
  absl::Status st;
  if (key == "delay_ms") {
    st = ParseMs(key, value, &next.delay_ms);
  } else if (key == "delay_jitter_ms") {
    st = ParseMs(key, value, &next.delay_jitter_ms);
  } else if (key == "error_rate") {
    st = ParseRate(key, value, &next.error_rate);
  } else if (key == "reset_rate") {
    st = ParseRate(key, value, &next.reset_rate);
  } else if (key == "hang") {
    st = ParseBool(key, value, &next.hang);
  } else if (key == "wrong_body") {
    st = ParseBool(key, value, &next.wrong_body);
  } else if (key == "real_only") {
    st = ParseBool(key, value, &next.real_only);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown knob '", key,
        "'; knobs: delay_ms delay_jitter_ms error_rate reset_rate hang wrong_body real_only"));
  }
  if (!st.ok()) return st;
  *knobs = next;
  return absl::OkStatus();
}

std::string KnobsJson(const Knobs& k) {
  return absl::StrFormat(
      "{\"delay_ms\":%d,\"delay_jitter_ms\":%d,\"error_rate\":%g,\"reset_rate\":%g,"
      "\"hang\":%s,\"wrong_body\":%s,\"real_only\":%s}",
      k.delay_ms, k.delay_jitter_ms, k.error_rate, k.reset_rate, k.hang ? "true" : "false",
      k.wrong_body ? "true" : "false", k.real_only ? "true" : "false");
}

absl::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kAnswer:
      return "answer";
    case Outcome::kError:
      return "error";
    case Outcome::kReset:
      return "reset";
    case Outcome::kHang:
      return "hang";
    case Outcome::kWrongBody:
      return "wrong_body";
  }
  return "?";
}

Plan Decide(const Knobs& knobs, bool is_probe, double u_reset, double u_error, double u_jitter) {
  Plan plan;
  if (!knobs.AnyFault() || (knobs.real_only && is_probe)) return plan;
  plan.faulted = true;
  if (knobs.hang) {
    plan.outcome = Outcome::kHang;
    return plan;
  }
  plan.delay_ms = knobs.delay_ms;
  if (knobs.delay_jitter_ms > 0) {
    auto extra = static_cast<int64_t>(u_jitter * static_cast<double>(knobs.delay_jitter_ms + 1));
    if (extra > knobs.delay_jitter_ms) extra = knobs.delay_jitter_ms;
    plan.delay_ms += extra;
  }
  if (u_reset < knobs.reset_rate) {
    plan.outcome = Outcome::kReset;
  } else if (u_error < knobs.error_rate) {
    plan.outcome = Outcome::kError;
  } else if (knobs.wrong_body) {
    plan.outcome = Outcome::kWrongBody;
  }
  return plan;
}

}  // namespace ballast::testbackend
