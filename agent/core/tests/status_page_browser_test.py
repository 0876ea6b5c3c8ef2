#!/usr/bin/env python3
"""The status page's chart in headless Chromium, from a known timeline.

core_tests "[.render]" writes the page of three backends whose timelines are
known (status_page_test.cc, KnownTimeline; now = 2023-11-14 22:13:20 UTC,
horizon one hour):
  198.18.1.1 healthy, score 100 and weight 100/100, first evaluated 78 s ago;
  198.18.1.2 degraded 30 min ago: score 100 -> 55, weight 100 -> 40;
  198.18.1.3 down 20 min ago (first evaluated 40 min ago): both -> 0.
Chromium loads it, dumps its DOM and takes a screenshot. Checked:
  DOM: every chart spans the hour to now and has its time axis (-60 min ..
  now) and value labels; the down backend's STATE reads "down" and its health
  says since when; the header says "last hour".
  Screenshot: each chart is found by its background; its axis labels are
  drawn under the ticks; the young backend's score line starts 78 s before
  now (the last 2% of the plot), after a "no data" band, and shows on top of
  the weight's area on the healthy row; the degraded backend's weight falls
  in the middle of the plot (30 min ago), the down one's score 20 min ago.
The screenshot is kept as an artefact (status-page-chart.png).

Usage: status_page_browser_test.py CORE_TESTS [ARTIFACT_DIR]
Needs chromium (Debian package, tools/setup.sh); fails without it.
"""
import html.parser
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

NOW_MS = 1_700_000_000_000
HOUR_MS = 3_600_000
SVG_W, SVG_H = 420, 80  # the chart's size (status_page.cc)
BG = (247, 249, 250)    # svg.chart's background
NODATA = (227, 231, 235)
AREA = (248, 215, 168)  # the weight's area
TICKS = ["-60 min", "-45 min", "-30 min", "-15 min", "now"]

failures = []


def check(ok, what):
    print(f"status_page_browser: {'ok' if ok else 'FAIL'}: {what}")
    if not ok:
        failures.append(what)


# ---- PNG (8-bit RGB or RGBA, not interlaced: what Chromium writes) ----------
def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                sys.exit(f"{path}: PNG depth {depth} type {ctype} interlace {interlace} not read")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return rows


def near(px, color, tol):
    return all(abs(p - c) <= tol for p, c in zip(px, color))


def blue(px):  # the score line, #2f6fde, antialiased
    r, g, b = px
    return b >= 170 and r <= 130 and b - r >= 90


def text(px):  # axis labels, #55606b (and the blue / dark orange value labels)
    r, g, b = px
    return max(r, g, b) <= 170


# ---- the DOM ------------------------------------------------------------------
class Page(html.parser.HTMLParser):
    """Per backend row: its cells' text, and its chart's ticks and labels."""

    def __init__(self):
        super().__init__()
        self.rows, self.row, self.cell, self.svg, self.text_class = {}, None, None, None, None
        self.headers = []
        self.in_th = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class", "").split()
        if tag == "tr" and "data-backend" in a:
            self.row = self.rows.setdefault(a["data-backend"], {"cells": {}, "svg": None})
        elif tag == "th":
            self.in_th = True
            self.headers.append("")
        elif tag == "td" and self.row is not None:
            self.cell = cls[0] if cls else f"td{len(self.row['cells'])}"
            self.row["cells"][self.cell] = ""
        elif tag == "svg" and self.row is not None:
            self.svg = {"start": int(a.get("data-start-ms", 0)), "end": int(a.get("data-end-ms", 0)),
                        "grid": [], "labels": {}}
            self.row["svg"] = self.svg
        elif tag == "line" and self.svg is not None and "grid" in cls:
            self.svg["grid"].append(float(a["x1"]))
        elif tag == "text" and self.svg is not None:
            self.text_class = cls[0] if cls else ""
            self.svg["labels"].setdefault(self.text_class, []).append("")

    def handle_endtag(self, tag):
        if tag == "tr":
            self.row, self.svg = None, None
        elif tag == "td":
            self.cell = None
        elif tag == "th":
            self.in_th = False
        elif tag == "svg":
            self.svg = None
        elif tag == "text":
            self.text_class = None

    def handle_data(self, data):
        if self.in_th:
            self.headers[-1] += data
        if self.svg is not None and self.text_class is not None:
            self.svg["labels"][self.text_class][-1] += data
        elif self.row is not None and self.cell is not None:
            self.row["cells"][self.cell] += data


def chromium(args, url, work):
    cmd = ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", "--window-size=1400,900",
           f"--user-data-dir={work}/profile"] + args + [url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, HOME=work))
    if r.returncode != 0:
        sys.exit(f"chromium failed ({r.returncode}): {r.stderr[-2000:]}")
    return r.stdout


def find_charts(img):
    """The top-left pixel of each chart: the first row whose background runs the
    chart's whole width (its top margin, above the plot); rows of that width
    further down the same chart (between the plot and its labels) are not
    another chart."""
    found = []
    for y, row in enumerate(img):
        x = 0
        while x < len(row):
            if row[x] != BG:
                x += 1
                continue
            start = x
            while x < len(row) and row[x] == BG:
                x += 1
            if x - start == SVG_W and not any(abs(fx - start) <= 1 and 0 < y - fy < SVG_H
                                              for fx, fy in found):
                found.append((start, y))
    return found


def main():
    core_tests = sys.argv[1]
    artifacts = sys.argv[2] if len(sys.argv) > 2 else os.environ.get(
        "BALLAST_ARTIFACT_DIR", os.path.join(os.path.dirname(core_tests), "artifacts"))
    if shutil.which("chromium") is None:
        sys.exit("chromium is not installed (Debian package chromium; tools/setup.sh installs it)")
    work = tempfile.mkdtemp(prefix="status-page-browser.")
    try:
        page = os.path.join(work, "status.html")
        r = subprocess.run([core_tests, "[.render]"], env=dict(os.environ, STATUS_PAGE_HTML=page),
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0 or not os.path.exists(page):
            sys.exit(f"core_tests [.render] failed: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        url = "file://" + page
        dom = chromium(["--dump-dom"], url, work)
        shot = os.path.join(work, "status.png")
        chromium([f"--screenshot={shot}"], url, work)
        os.makedirs(artifacts, exist_ok=True)
        kept = os.path.join(artifacts, "status-page-chart.png")
        shutil.copyfile(shot, kept)
        print(f"status_page_browser: screenshot {kept}")

        p = Page()
        p.feed(dom)
        check(any(h.startswith("last hour") for h in p.headers),
              f'the chart column says "last hour" (headers: {p.headers})')
        order = ["198.18.1.1", "198.18.1.2", "198.18.1.3"]
        check(sorted(p.rows) == order, f"the three backends' rows ({sorted(p.rows)})")
        for b in order:
            svg = p.rows.get(b, {}).get("svg") or {"start": 0, "end": 0, "grid": [], "labels": {}}
            check(svg["end"] == NOW_MS and svg["end"] - svg["start"] == HOUR_MS,
                  f"{b}: the chart spans the hour to now ({svg['start']}..{svg['end']})")
            check(svg["labels"].get("tick") == TICKS, f"{b}: time axis labels {svg['labels'].get('tick')}")
            check(svg["labels"].get("score-axis") == ["100", "0"] and
                  svg["labels"].get("weight-axis") == ["100", "0"],
                  f"{b}: value labels {svg['labels'].get('score-axis')} {svg['labels'].get('weight-axis')}")
            check(len(svg["grid"]) == 5, f"{b}: 5 ticks ({svg['grid']})")
        down = p.rows.get("198.18.1.3", {"cells": {}})["cells"]
        check(down.get("state", "").strip() == "down", f"the down backend's STATE: {down.get('state')!r}")
        check("since 2023-11-14 21:53:21 UTC" in down.get("health", ""),
              f"the down backend's health says since when: {down.get('health')!r}")

        img = read_png(shot)
        charts = sorted(find_charts(img), key=lambda c: c[1])
        check(len(charts) == 3, f"three charts in the screenshot at {charts}")
        if len(charts) != 3 or any(not p.rows.get(b, {}).get("svg") for b in order):
            return 1
        grid = p.rows[order[0]]["svg"]["grid"]
        left, right = grid[0], grid[-1]

        def at(chart, x, y):
            ox, oy = charts[chart]
            return img[oy + y][ox + x]

        def x_of(ago_ms):
            return left + (right - left) * (HOUR_MS - ago_ms) / HOUR_MS

        # Axis labels drawn under each tick (text pixels in the label band).
        for c in range(3):
            for i, tx in enumerate(grid):
                lo = int(tx) if i == 0 else int(tx) - 28 if i == 4 else int(tx) - 16
                n = sum(text(at(c, x, y)) for x in range(max(0, lo), min(SVG_W, lo + 30))
                        for y in range(62, SVG_H))
                check(n >= 8, f"chart {c + 1}: label {TICKS[i]!r} drawn under its tick ({n} pixels)")
        plot_rows = range(5, 62)

        def blue_cols(c):
            return sorted({x for x in range(int(left), int(right) + 1) for y in plot_rows
                           if blue(at(c, x, y))})

        # The young backend: its 78 s at the right end, no data before.
        cols = blue_cols(0)
        want = x_of(78_000)
        check(bool(cols) and abs(cols[0] - want) <= 2,
              f"healthy backend: the score line starts at x {cols[0] if cols else None} "
              f"(78 s ago: {want:.1f})")
        nodata = sum(near(at(0, x, 30), NODATA, 3) for x in range(int(left) + 2, int(want) - 2))
        check(nodata >= (want - left) * 0.9, f"healthy backend: no-data band before it ({nodata} px)")
        top_blue = [y for y in plot_rows if blue(at(0, int(want) + 4, y))]
        area = [y for y in plot_rows if near(at(0, int(want) + 4, y), AREA, 12)]
        check(bool(top_blue) and max(top_blue) <= 9 and len(area) >= 40,
              f"healthy backend: score line on top ({top_blue}) over the weight's area "
              f"({len(area)} px high)")

        # The degraded backend: its weight falls 30 min ago, mid-plot.
        def area_top(c, x):
            ys = [y for y in plot_rows if near(at(c, x, y), AREA, 12)]
            return min(ys) if ys else None

        fall = next((x for x in range(int(left) + 1, int(right)) if (area_top(1, x) or 0) > 30),
                    None)
        want = x_of(1_800_000)
        check(fall is not None and abs(fall - want) <= 2,
              f"degraded backend: the weight falls at x {fall} (30 min ago: {want:.1f})")
        check(area_top(1, int(left) + 5) is not None and area_top(1, int(left) + 5) <= 9,
              "degraded backend: the weight is full from the hour's start")

        # The down backend: its score drops to 0 at 20 min ago.
        drop = next((x for x in range(int(left) + 1, int(right))
                     if any(blue(at(2, x, y)) for y in range(55, 62))), None)
        want = x_of(1_200_000)
        check(drop is not None and abs(drop - want) <= 2,
              f"down backend: the score falls to 0 at x {drop} (20 min ago: {want:.1f})")
        first = blue_cols(2)
        check(bool(first) and abs(first[0] - x_of(2_400_000)) <= 2,
              f"down backend: data from 40 min ago (x {first[0] if first else None})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print(f"status_page_browser: {len(failures)} failure(s)")
        return 1
    print("status_page_browser: the chart's axis, labels and time span hold in the DOM and the screenshot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
