#!/usr/bin/env python3
"""Checks deploy/grafana-dashboard.json against real /metrics scrapes.

Every metric a query or a template variable names must be exported in one of
the scrapes (a family's `# TYPE` line counts, so a family without samples is
still known; a summary's or histogram's _sum, _count and _bucket follow from
its family), and every label a selector or a `by (...)` names must be on that
metric's samples (or be `router`, which the scrape config adds). Panels whose
title starts with one of --skip prefixes (BGP:, Cluster:) are left out, for a
scrape of an agent without that section.

Usage: dashboard_check.py DASHBOARD SCRAPE [SCRAPE...] [--skip PREFIX...]
Exit 0 and a summary line when the dashboard holds; 1 and every fault.
"""
import argparse
import json
import re
import sys

METRIC = re.compile(r"\b((?:ballast|process)_[a-z0-9_]+)\b")
SELECTOR = re.compile(r"\b((?:ballast|process)_[a-z0-9_]+)\{([^}]*)\}")
BY = re.compile(r"\bby\s*\(([^)]*)\)")
LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s")
SAMPLE_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="')
ADDED_BY_SCRAPE = {"router", "instance", "job"}


def read_scrapes(paths):
    """name -> set of label names seen on its samples (None: no sample)."""
    known = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("# TYPE "):
                    _, _, name, kind = line.split()[:4]
                    names = [name]
                    if kind in ("summary", "histogram"):
                        names += [name + "_sum", name + "_count", name + "_bucket"]
                    for n in names:
                        known.setdefault(n, None)
                    continue
                if line.startswith("#") or not line.strip():
                    continue
                m = SAMPLE.match(line)
                if not m:
                    continue
                labels = set(SAMPLE_LABEL.findall(m.group(2) or ""))
                if known.get(m.group(1)) is None:
                    known[m.group(1)] = set()
                known[m.group(1)] |= labels
    return known


def queries(dash, skip):
    """(where, expr) for every target of every panel (rows included) and
    every query variable."""
    out = []

    def walk(panels):
        for p in panels:
            if any(p.get("title", "").startswith(s) for s in skip):
                continue
            for t in p.get("targets", []):
                out.append((f'panel "{p.get("title")}" {t.get("refId")}', t.get("expr", "")))
            walk(p.get("panels", []))

    walk(dash.get("panels", []))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else q
            out.append((f'variable "{v.get("name")}"', q))
    return out


def check_layout(dash):
    faults = []
    ids = []

    def walk(panels):
        for p in panels:
            ids.append(p.get("id"))
            if "gridPos" not in p:
                faults.append(f'panel "{p.get("title")}" has no gridPos')
            ds = p.get("datasource")
            if p.get("type") != "row" and (not ds or ds.get("uid") != "${datasource}"):
                faults.append(f'panel "{p.get("title")}" does not use the $datasource variable')
            walk(p.get("panels", []))

    walk(dash.get("panels", []))
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        faults.append(f"duplicate panel ids: {sorted(dup)}")
    for key in ("title", "uid", "schemaVersion"):
        if key not in dash:
            faults.append(f"the dashboard has no {key}")
    return faults


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("scrapes", nargs="+")
    ap.add_argument("--skip", nargs="*", default=[])
    a = ap.parse_args()
    with open(a.dashboard, encoding="utf-8") as f:
        dash = json.load(f)
    known = read_scrapes(a.scrapes)
    faults = check_layout(dash)
    names = set()
    qs = queries(dash, a.skip)
    for where, expr in qs:
        if not expr.strip():
            faults.append(f"{where}: empty query")
            continue
        used = set(METRIC.findall(expr))
        names |= used
        for n in sorted(used):
            if n not in known:
                faults.append(f"{where}: {n} is not exported")
        expr_labels = set()
        for name, sel in SELECTOR.findall(expr):
            seen = known.get(name)
            for label in LABEL.findall(sel):
                if label in ADDED_BY_SCRAPE or seen is None:
                    continue
                if label not in seen:
                    faults.append(f"{where}: {name} has no label {label} (has {sorted(seen)})")
        for n in used:
            expr_labels |= known.get(n) or set()
        for group in BY.findall(expr):
            for label in [x.strip() for x in group.split(",") if x.strip()]:
                if label not in ADDED_BY_SCRAPE and expr_labels and label not in expr_labels:
                    faults.append(f"{where}: by ({label}) is no label of {sorted(used)}")
    if faults:
        for f in faults:
            print(f"dashboard_check: FAULT: {f}")
        return 1
    print(f"dashboard_check: {len(qs)} queries name {len(names)} metrics, "
          f"all exported with the labels they use ({len(known)} names in the scrapes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
