#include "agent/core/status_page.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "agent/base/html.h"
#include "agent/core/names.h"

namespace ballast::core {
namespace {

using base::HtmlEscape;

constexpr int kSvgWidth = 360;
constexpr int kSvgHeight = 60;

constexpr char kStyle[] = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d232a; }
h1 { font-size: 1.4em; margin: 0 0 .2em; }
h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
header p, .vip p { color: #55606b; margin: .2em 0; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid #e3e7eb; vertical-align: middle; }
th { font-weight: 600; color: #55606b; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.impaired td { background: #fff4e5; }
.badge { display: inline-block; padding: 0 .45em; border-radius: .6em; font-size: .9em; background: #e3e7eb; }
.health-healthy .badge.health { background: #d6f5dd; }
.health-degraded .badge.health, .health-ramping .badge.health { background: #ffe2b3; }
.health-down .badge.health, .health-pinned .badge.health { background: #ffc9c9; }
.badge.frozen { background: #cfe3ff; }
.error { background: #ffc9c9; padding: .5em; }
svg { background: #f7f9fa; }
polyline { fill: none; stroke-width: 1.5; }
polyline.score { stroke: #2f6fde; }
polyline.weight { stroke: #e07b00; }
.legend-score { color: #2f6fde; } .legend-weight { color: #e07b00; }
.muted { color: #8a949e; }
)css";

std::string TimeText(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

bool Impaired(const v1::BackendStatus& b) {
  if (!b.health().empty() && b.health() != "healthy") return true;
  if (b.state() != "active") return true;
  return b.nominal_weight() > 0 && b.effective_weight() < b.nominal_weight();
}

// Score and effective weight over time, one polyline each; each also carries
// its values (data-values) so a test can read the series from the DOM.
std::string TimelineSvg(const std::vector<TimelinePoint>& pts, uint32_t nominal,
                        const StatusPageInput& in) {
  if (pts.empty()) return "<span class=\"muted\">no evaluation yet</span>";
  const int64_t end = std::max(in.now_unix_ms, pts.back().unix_ms);
  int64_t start = std::max(pts.front().unix_ms, end - in.horizon_ms);
  if (end - start < 1000) start = end - 1000;
  uint32_t max_weight = std::max<uint32_t>(nominal, 1);
  for (const TimelinePoint& p : pts) max_weight = std::max(max_weight, p.weight);
  auto x = [&](int64_t t) {
    return static_cast<double>(std::max(t, start) - start) * (kSvgWidth - 2) /
               static_cast<double>(end - start) +
           1;
  };
  auto y = [](double frac) { return (kSvgHeight - 2) * (1 - frac) + 1; };
  std::string score_pts, weight_pts;
  std::vector<std::string> score_vals, weight_vals;
  for (size_t i = 0; i <= pts.size(); ++i) {
    // The last value is drawn on to now.
    const TimelinePoint& p = pts[std::min(i, pts.size() - 1)];
    const int64_t t = i < pts.size() ? p.unix_ms : end;
    absl::StrAppendFormat(&score_pts, "%s%.1f,%.1f", i ? " " : "", x(t), y(p.score / 100.0));
    absl::StrAppendFormat(&weight_pts, "%s%.1f,%.1f", i ? " " : "", x(t),
                          y(static_cast<double>(p.weight) / max_weight));
    if (i < pts.size()) {
      score_vals.push_back(absl::StrCat(p.score));
      weight_vals.push_back(absl::StrCat(p.weight));
    }
  }
  return absl::StrCat(
      "<svg width=\"", kSvgWidth, "\" height=\"", kSvgHeight, "\" viewBox=\"0 0 ", kSvgWidth, " ",
      kSvgHeight, "\" role=\"img\" aria-label=\"score and effective weight since ", TimeText(start),
      "\"><title>since ", TimeText(start), ": score 0..100 (blue), weight 0..", max_weight,
      " (orange)</title><polyline class=\"score\" data-values=\"", absl::StrJoin(score_vals, ","),
      "\" points=\"", score_pts, "\"/><polyline class=\"weight\" data-values=\"",
      absl::StrJoin(weight_vals, ","), "\" points=\"", weight_pts, "\"/></svg>");
}

void AppendVip(std::string* out, const v1::VipStatus& vip, const StatusPageInput& in) {
  const std::string key = VipKeyText(vip.key());
  absl::StrAppend(out, "<section class=\"vip", vip.frozen() ? " frozen" : "", "\" data-vip=\"",
                  HtmlEscape(key), "\"><h2>", HtmlEscape(key));
  if (!vip.name().empty()) absl::StrAppend(out, " <small>", HtmlEscape(vip.name()), "</small>");
  if (vip.frozen()) {
    absl::StrAppend(out, " <span class=\"badge frozen\">frozen since ",
                    TimeText(vip.frozen_since_unix_ms()), "</span>");
  }
  absl::StrAppend(out, "</h2><p>table size ", vip.table_size(), " &middot; ", vip.packets(),
                  " packets &middot; ", vip.dropped(), " dropped</p>");
  absl::StrAppend(out,
                  "<table><thead><tr><th>backend</th><th>state</th><th>health</th><th>score</th>"
                  "<th>weight</th><th>slots</th><th>flows</th><th>why</th><th>last hour: <span "
                  "class=\"legend-score\">score</span>, <span "
                  "class=\"legend-weight\">weight</span></th></tr></thead><tbody>");
  for (const v1::BackendStatus& b : vip.backends()) {
    const std::string health = b.health().empty() ? "off" : b.health();
    absl::StrAppend(
        out, "<tr class=\"backend health-", HtmlEscape(health), Impaired(b) ? " impaired" : "",
        "\" data-backend=\"", HtmlEscape(b.address()), "\" data-health=\"", HtmlEscape(health),
        "\"><td>", HtmlEscape(b.address()), "</td><td>", HtmlEscape(b.state()),
        "</td><td><span class=\"badge health\">", HtmlEscape(health), "</span>",
        b.ramp_percent() > 0 && b.ramp_percent() < 100 ? absl::StrCat(" ", b.ramp_percent(), "%")
                                                       : "",
        "</td><td class=\"num\">", b.health().empty() ? "-" : absl::StrCat(b.score()),
        "</td><td class=\"num\">", b.effective_weight(), " / ", b.nominal_weight(),
        "</td><td class=\"num\">", b.table_slots(), "</td><td class=\"num\">", b.flows(),
        "</td><td>");
    std::vector<std::string> why;
    for (const std::string& c : b.conditions()) why.push_back(HtmlEscape(c));
    if (!b.last_probe().empty()) why.push_back("probe: " + HtmlEscape(b.last_probe()));
    absl::StrAppend(out, absl::StrJoin(why, "<br>"), "</td><td>");
    auto t = in.timelines.find({key, b.address()});
    if (b.health().empty()) {
      absl::StrAppend(out, "<span class=\"muted\">health checking off</span>");
    } else {
      static const std::vector<TimelinePoint> kNone;
      absl::StrAppend(
          out, TimelineSvg(t == in.timelines.end() ? kNone : t->second, b.nominal_weight(), in));
    }
    absl::StrAppend(out, "</td></tr>");
  }
  absl::StrAppend(out, "</tbody></table></section>");
}

void AppendActions(std::string* out, const std::vector<v1::AuditRecord>& recent) {
  absl::StrAppend(out, "<section id=\"actions\"><h2>Last actions</h2>");
  if (recent.empty()) {
    absl::StrAppend(out, "<p>none recently</p></section>");
    return;
  }
  absl::StrAppend(out,
                  "<table><thead><tr><th>time</th><th>actor</th><th>action</th><th>VIP</th>"
                  "<th>backend</th><th>result</th></tr></thead><tbody>");
  for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
    absl::StrAppend(out, "<tr class=\"action\" data-action=\"", HtmlEscape(it->action()), "\"><td>",
                    TimeText(it->unix_ms()), "</td><td>", HtmlEscape(it->actor()), "</td><td>",
                    HtmlEscape(it->action()), "</td><td>", HtmlEscape(it->vip()), "</td><td>",
                    HtmlEscape(it->backend()), "</td><td>", HtmlEscape(it->result()), "</td></tr>");
  }
  absl::StrAppend(out, "</tbody></table></section>");
}

}  // namespace

std::string RenderStatusPage(const StatusPageInput& in) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"refresh\" content=\"10\"><title>ballast lbagent</title><style>";
  absl::StrAppend(&out, kStyle, "</style></head><body><header><h1>ballast lbagent</h1><p>");
  if (in.status != nullptr) {
    const v1::StatusResponse& s = *in.status;
    absl::StrAppend(&out, "version ", HtmlEscape(s.agent_version()), " &middot; interface ",
                    HtmlEscape(s.interface()), " (", HtmlEscape(s.attach_mode()),
                    ") &middot; configuration generation ", s.config_generation(), " &middot; ");
  }
  absl::StrAppend(&out, "as of <time>", TimeText(in.now_unix_ms),
                  "</time> (refreshes every 10 s)</p></header>");
  if (in.status == nullptr) {
    absl::StrAppend(&out,
                    "<p class=\"error\">reading the status failed: ", HtmlEscape(in.status_error),
                    "</p>");
  } else if (in.status->vips().empty()) {
    absl::StrAppend(&out, "<p>no VIPs configured</p>");
  } else {
    for (const v1::VipStatus& vip : in.status->vips()) AppendVip(&out, vip, in);
  }
  if (!in.hide_actions) AppendActions(&out, in.recent);
  absl::StrAppend(&out, "</body></html>\n");
  return out;
}

}  // namespace ballast::core
