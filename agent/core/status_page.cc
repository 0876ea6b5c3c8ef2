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

// The chart (CSS pixels): the plot, the time axis's labels below it, the
// score's scale on the left and the weight's on the right.
constexpr int kSvgWidth = 420;
constexpr int kSvgHeight = 80;
constexpr double kPlotLeft = 28;
constexpr double kPlotRight = 392;
constexpr double kPlotTop = 6;
constexpr double kPlotBottom = 60;
constexpr int kTicks = 4;  // intervals of the time axis

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
.since { display: block; font-size: .85em; color: #55606b; white-space: nowrap; }
.error { background: #ffc9c9; padding: .5em; }
svg.chart { background: #f7f9fa; display: block; }
svg .nodata { fill: #e3e7eb; }
svg .grid { stroke: #d5dbe0; stroke-width: 1; }
svg text { font: 9px sans-serif; fill: #55606b; }
svg text.score-axis { fill: #2f6fde; }
svg text.weight-axis { fill: #b35f00; }
polygon.weight-area { fill: #f8d7a8; stroke: none; }
polyline { fill: none; }
polyline.weight { stroke: #e07b00; stroke-width: 1.5; }
polyline.score { stroke: #2f6fde; stroke-width: 2; }
.legend-score { color: #2f6fde; } .legend-weight { color: #b35f00; }
.muted { color: #8a949e; }
)css";

std::string TimeText(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

// "last hour", "last 30 min", "last 90 s": what the chart spans.
std::string SpanText(int64_t ms) {
  if (ms == 3'600'000) return "last hour";
  if (ms % 60'000 == 0) return absl::StrCat("last ", ms / 60'000, " min");
  return absl::StrCat("last ", ms / 1000, " s");
}

// A tick of the time axis, `ago_ms` before now: "now", "-15 min", "-45 s".
std::string TickText(int64_t ago_ms) {
  if (ago_ms == 0) return "now";
  if (ago_ms % 60'000 == 0) return absl::StrCat("-", ago_ms / 60'000, " min");
  return absl::StrCat("-", ago_ms / 1000, " s");
}

bool Impaired(const v1::BackendStatus& b) {
  if (!b.health().empty() && b.health() != "healthy") return true;
  if (b.state() != "active") return true;
  return b.nominal_weight() > 0 && b.effective_weight() < b.nominal_weight();
}

// What the backend gets: its admin state, unless it is active and health
// checking holds it out (down, pinned), which is what traffic sees.
std::string ServingState(const v1::BackendStatus& b) {
  if (b.state() == "active" && HealthHoldsOut(b.health())) return b.health();
  return b.state();
}

// "since 2026-12-08 10:02:03 UTC (4m12s)" for a health state, or "since
// before ..." when it has not changed since the agent's first evaluation.
std::string SinceText(const v1::BackendStatus& b, int64_t now_unix_ms) {
  if (b.health().empty() || b.health_since_unix_ms() == 0) return "";
  const absl::Duration held =
      absl::Trunc(absl::Milliseconds(std::max<int64_t>(0, now_unix_ms - b.health_since_unix_ms())),
                  absl::Seconds(1));
  return absl::StrCat("<span class=\"since\" data-since-ms=\"", b.health_since_unix_ms(), "\">",
                      b.health_transitions() == 0 ? "since before " : "since ",
                      TimeText(b.health_since_unix_ms()), " (",
                      b.health_transitions() == 0 ? "the agent's first check, " : "",
                      absl::FormatDuration(held), ")</span>");
}

// Score and effective weight over the last in.horizon_ms, to now: the x
// axis always spans the whole horizon (ticks and labels below it), a
// backend younger than that has a "no data" band before its first point.
// The weight is an area with its line, the score a line drawn over both,
// so neither hides the other when they coincide. The polylines carry their
// values and times (data-values, data-times) and the svg its span
// (data-start-ms, data-end-ms), so a test can read the series from the DOM.
std::string TimelineSvg(const std::vector<TimelinePoint>& pts, uint32_t nominal,
                        const StatusPageInput& in) {
  if (pts.empty()) return "<span class=\"muted\">no evaluation yet</span>";
  const int64_t end = in.now_unix_ms;
  const int64_t span = std::max<int64_t>(in.horizon_ms, 1000);
  const int64_t start = end - span;
  uint32_t max_weight = std::max<uint32_t>(nominal, 1);
  for (const TimelinePoint& p : pts) max_weight = std::max(max_weight, p.weight);
  auto x = [&](int64_t t) {
    return kPlotLeft + static_cast<double>(std::clamp<int64_t>(t - start, 0, span)) *
                           (kPlotRight - kPlotLeft) / static_cast<double>(span);
  };
  auto y = [](double frac) { return kPlotBottom - frac * (kPlotBottom - kPlotTop); };
  std::string score_pts, weight_pts;
  std::vector<std::string> score_vals, weight_vals, times;
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
      times.push_back(absl::StrCat(p.unix_ms));
    }
  }
  const double first_x = x(pts.front().unix_ms);
  std::string svg = absl::StrCat(
      "<svg class=\"chart\" width=\"", kSvgWidth, "\" height=\"", kSvgHeight, "\" viewBox=\"0 0 ",
      kSvgWidth, " ", kSvgHeight, "\" data-start-ms=\"", start, "\" data-end-ms=\"", end,
      "\" role=\"img\" aria-label=\"score and effective weight from ", TimeText(start), " to ",
      TimeText(end), "\"><title>", SpanText(span), ", ", TimeText(start), " to ", TimeText(end),
      ": score 0..100 (blue line), effective weight 0..", max_weight, " (orange)</title>");
  if (first_x > kPlotLeft + 0.5) {
    absl::StrAppendFormat(&svg,
                          "<rect class=\"nodata\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                          "height=\"%.1f\"><title>no data before %s</title></rect>",
                          kPlotLeft, kPlotTop, first_x - kPlotLeft, kPlotBottom - kPlotTop,
                          TimeText(pts.front().unix_ms));
  }
  for (int i = 0; i <= kTicks; ++i) {
    const int64_t ago = span * (kTicks - i) / kTicks;
    const double tx = x(end - ago);
    absl::StrAppendFormat(&svg,
                          "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                          "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>",
                          tx, kPlotTop, tx, kPlotBottom + 3, tx, kSvgHeight - 6,
                          i == 0 ? "start" : i == kTicks ? "end" : "middle", TickText(ago));
  }
  absl::StrAppendFormat(
      &svg,
      "<text class=\"score-axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">100</text>"
      "<text class=\"score-axis\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>"
      "<text class=\"weight-axis\" x=\"%.1f\" y=\"%.1f\">%d</text>"
      "<text class=\"weight-axis\" x=\"%.1f\" y=\"%.1f\">0</text>",
      kPlotLeft - 3, kPlotTop + 6, kPlotLeft - 3, kPlotBottom, kPlotRight + 3, kPlotTop + 6,
      max_weight, kPlotRight + 3, kPlotBottom);
  absl::StrAppendFormat(&svg, "<polygon class=\"weight-area\" points=\"%.1f,%.1f %s %.1f,%.1f\"/>",
                        first_x, kPlotBottom, weight_pts, x(end), kPlotBottom);
  absl::StrAppend(&svg, "<polyline class=\"weight\" data-values=\"",
                  absl::StrJoin(weight_vals, ","), "\" data-times=\"", absl::StrJoin(times, ","),
                  "\" points=\"", weight_pts, "\"/><polyline class=\"score\" data-values=\"",
                  absl::StrJoin(score_vals, ","), "\" data-times=\"", absl::StrJoin(times, ","),
                  "\" points=\"", score_pts, "\"/></svg>");
  return svg;
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
                  "<th>weight</th><th>slots</th><th>flows</th><th>why</th><th>",
                  SpanText(std::max<int64_t>(in.horizon_ms, 1000)),
                  ": <span class=\"legend-score\">score</span>, <span "
                  "class=\"legend-weight\">effective weight</span></th></tr></thead><tbody>");
  for (const v1::BackendStatus& b : vip.backends()) {
    const std::string health = b.health().empty() ? "off" : b.health();
    absl::StrAppend(
        out, "<tr class=\"backend health-", HtmlEscape(health), Impaired(b) ? " impaired" : "",
        "\" data-backend=\"", HtmlEscape(b.address()), "\" data-health=\"", HtmlEscape(health),
        "\"><td>", HtmlEscape(b.address()), "</td><td class=\"state\">",
        HtmlEscape(ServingState(b)), "</td><td class=\"health\"><span class=\"badge health\">",
        HtmlEscape(health), "</span>",
        b.ramp_percent() > 0 && b.ramp_percent() < 100 ? absl::StrCat(" ", b.ramp_percent(), "%")
                                                       : "",
        b.health() == "healthy" ? "" : SinceText(b, in.now_unix_ms), "</td><td class=\"num\">", b.health().empty() ? "-" : absl::StrCat(b.score()),
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
