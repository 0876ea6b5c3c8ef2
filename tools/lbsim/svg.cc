#include "tools/lbsim/svg.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/base/html.h"

namespace ballast::lbsim {

namespace {

constexpr const char* kFont = "font-family=\"sans-serif\"";

std::string Escape(const std::string& s) { return base::HtmlEscape(s); }

// A number for a tick label: no trailing zeros.
std::string Tick(double v) {
  if (std::fabs(v) < 1e-12) return "0";
  std::string s = absl::StrFormat("%.6g", v);
  return s;
}

std::vector<double> NiceTicks(double lo, double hi, int want) {
  std::vector<double> t;
  if (!(hi > lo)) {
    t.push_back(lo);
    return t;
  }
  const double raw = (hi - lo) / want;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) {
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  return t;
}

// A rectangle of the canvas mapped to data coordinates.
struct Panel {
  double left, top, width, height;
  double x0, x1, y0, y1;
  double X(double x) const { return left + (x - x0) / (x1 - x0) * width; }
  double Y(double y) const { return top + height - (y - y0) / (y1 - y0) * height; }
};

void Axes(std::string* out, const Panel& p, const std::string& ylabel, bool xticks,
          const std::string& xlabel) {
  absl::StrAppendFormat(out,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                        "stroke=\"#888\"/>\n",
                        p.left, p.top, p.width, p.height);
  for (double y : NiceTicks(p.y0, p.y1, 4)) {
    absl::StrAppendFormat(out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" %s>%s"
                          "</text>\n",
                          p.left, p.Y(y), p.left + p.width, p.Y(y), p.left - 4, p.Y(y) + 3, kFont,
                          Tick(y));
  }
  if (xticks) {
    for (double x : NiceTicks(p.x0, p.x1, 8)) {
      absl::StrAppendFormat(
          out,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\" "
          "%s>%s</text>\n",
          p.X(x), p.top + p.height, p.X(x), p.top + p.height + 3, p.X(x), p.top + p.height + 14,
          kFont, Tick(x));
    }
  }
  if (!xlabel.empty()) {
    absl::StrAppendFormat(out,
                          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" "
                          "%s>%s</text>\n",
                          p.left + p.width / 2, p.top + p.height + 28, kFont, Escape(xlabel));
  }
  absl::StrAppendFormat(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" %s>%s</text>\n", p.left,
                        p.top - 5, kFont, Escape(ylabel));
}

void Polyline(std::string* out, const Panel& p, const std::vector<std::pair<double, double>>& pts,
              const char* color, bool step, double width = 1.5) {
  if (pts.empty()) return;
  std::string d;
  for (size_t i = 0; i < pts.size(); ++i) {
    if (step && i > 0) {
      absl::StrAppendFormat(&d, "%.1f,%.1f ", p.X(pts[i].first), p.Y(pts[i - 1].second));
    }
    absl::StrAppendFormat(&d, "%.1f,%.1f ", p.X(pts[i].first), p.Y(pts[i].second));
  }
  absl::StrAppendFormat(out,
                        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
                        "points=\"%s\"/>\n",
                        color, width, d);
}

std::string Header(double w, double h, const std::string& title) {
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 "
      "%.0f %.0f\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"10\" y=\"18\" font-size=\"13\" font-weight=\"bold\" %s>%s</text>\n",
      w, h, w, h, kFont, Escape(title));
}

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

}  // namespace

std::string TimelineSvg(const Scenario& sc, const RunResult& r) {
  const double w = 900, row = 150, top = 50;
  const double h = top + row * static_cast<double>(std::max<size_t>(1, r.timelines.size())) + 20;
  std::string title = absl::StrCat("lbsim ", r.scenario, r.variant.empty() ? "" : " / ", r.variant,
                                   ": score and weight per backend");
  std::string out = Header(w, h, title);
  absl::StrAppendFormat(
      &out,
      "<text x=\"10\" y=\"34\" font-size=\"11\" %s><tspan fill=\"%s\">score (leader)</tspan>  "
      "<tspan fill=\"%s\">weight, %% of nominal (table)</tspan>  <tspan fill=\"#999\">shaded: "
      "the backend's faults</tspan></text>\n",
      kFont, kColors[0], kColors[4]);
  for (size_t i = 0; i < r.timelines.size(); ++i) {
    const BackendTimeline& tl = r.timelines[i];
    Panel p{60, top + row * static_cast<double>(i) + 15, w - 80, row - 45, 0, r.duration_s, 0, 105};
    for (const FaultSpan& f : tl.faults) {
      absl::StrAppendFormat(&out,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                            "fill=\"#ddd\"/>\n",
                            p.X(f.from), p.top, std::max(0.5, p.X(f.to) - p.X(f.from)), p.height);
    }
    // Label each fault kind once per panel.
    std::vector<std::string> labelled;
    for (const FaultSpan& f : tl.faults) {
      if (std::find(labelled.begin(), labelled.end(), f.kind) != labelled.end()) continue;
      labelled.push_back(f.kind);
      absl::StrAppendFormat(
          &out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" fill=\"#666\" %s>%s</text>\n",
          p.X(f.from) + 2, p.top + 10, kFont, Escape(f.kind));
    }
    std::vector<std::pair<double, double>> score, weight;
    for (const TimelinePoint& pt : tl.points) {
      score.emplace_back(pt.t, pt.score);
      weight.emplace_back(pt.t, 100.0 * pt.weight / std::max<uint32_t>(1, sc.weight));
    }
    Polyline(&out, p, weight, kColors[4], true, 2.0);
    Polyline(&out, p, score, kColors[0], false);
    Axes(&out, p, absl::StrCat("backend ", tl.backend, " (", tl.key, ")"), true,
         i + 1 == r.timelines.size() ? "simulated time (s)" : "");
  }
  out += "</svg>\n";
  return out;
}

std::string SweepSvg(const std::string& title, const std::string& tunable,
                     const std::vector<SweepRow>& rows, const std::vector<std::string>& metrics) {
  const double pw = 300, ph = 180, gap = 70;
  const size_t cols = std::min<size_t>(3, std::max<size_t>(1, metrics.size()));
  const size_t nrows = (metrics.size() + cols - 1) / cols;
  const double w = 30 + cols * (pw + gap), h = 50 + nrows * (ph + gap);
  std::string out = Header(w, h, title);
  // x: the values when all are numbers, else their positions.
  std::vector<double> xs;
  bool numeric = true;
  for (const SweepRow& r : rows) {
    double v;
    numeric = numeric && absl::SimpleAtod(r.value, &v);
    xs.push_back(numeric ? v : 0);
  }
  if (!numeric) {
    for (size_t i = 0; i < rows.size(); ++i) xs[i] = static_cast<double>(i);
  }
  double x0 = xs.empty() ? 0 : *std::min_element(xs.begin(), xs.end());
  double x1 = xs.empty() ? 1 : *std::max_element(xs.begin(), xs.end());
  if (x1 <= x0) x1 = x0 + 1;
  const double pad = (x1 - x0) * 0.05;
  for (size_t m = 0; m < metrics.size(); ++m) {
    std::vector<std::pair<double, double>> pts;
    double y0 = 0, y1 = 0;
    bool first = true;
    for (size_t i = 0; i < rows.size(); ++i) {
      const double y = FindMetric(rows[i].metrics, metrics[m]).value_or(0);
      pts.emplace_back(xs[i], y);
      y0 = first ? y : std::min(y0, y);
      y1 = first ? y : std::max(y1, y);
      first = false;
    }
    if (metrics[m] != "success_fraction") y0 = std::min(0.0, y0);
    if (y1 <= y0) y1 = y0 + (y0 == 0 ? 1 : std::fabs(y0) * 0.1);
    const double ypad = (y1 - y0) * 0.08;
    const size_t c = m % cols, rr = m / cols;
    Panel p{60 + c * (pw + gap),
            50 + rr * (ph + gap),
            pw,
            ph,
            x0 - pad,
            x1 + pad,
            y0 - ypad,
            y1 + ypad};
    Axes(&out, p, metrics[m], numeric, tunable);
    if (!numeric) {
      for (size_t i = 0; i < rows.size(); ++i) {
        absl::StrAppendFormat(&out,
                              "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\" "
                              "%s>%s</text>\n",
                              p.X(xs[i]), p.top + p.height + 14, kFont, Escape(rows[i].value));
      }
    }
    Polyline(&out, p, pts, kColors[m % 6], false, 2.0);
    for (const auto& [x, y] : pts) {
      absl::StrAppendFormat(&out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", p.X(x),
                            p.Y(y), kColors[m % 6]);
    }
  }
  out += "</svg>\n";
  return out;
}

}  // namespace ballast::lbsim
