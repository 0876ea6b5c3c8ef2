#!/usr/bin/env python3
"""Evaluates deploy/grafana-dashboard.json's agent panels with promtool.

Three routers behind one Prometheus: r1 answers and reads its data plane,
r2's lbagent died two minutes in (its scrape fails: up 0, its ballast_*
series go stale), r3 answers but cannot read its data plane (ballast_up 0).
The "Agents up" panel must show r1 1, r2 0 and r3 0 (a dead agent is 0,
not "no data"), and the $router variable must still list r2.

The panel's query and the variable's come from the dashboard itself ($vip,
$backend and $router as "All": .*); promtool test rules evaluates them
(promql_expr_test) on those series.

Usage: dashboard_queries_test.py PROMTOOL DASHBOARD
Exit 0 when every expectation holds; 1 with promtool's report otherwise.
"""
import json
import re
import subprocess
import sys
import tempfile

JOB = "ballast-lbagent"  # deploy/prometheus-scrape.yml's job_name


def panels(dash):
    def walk(ps):
        for p in ps:
            yield p
            yield from walk(p.get("panels", []))
    yield from walk(dash.get("panels", []))


def substitute(expr):
    return re.sub(r"\$\{?(router|vip|backend)\}?", ".*", expr)


def variable_expr(dash, name):
    """label_values(SELECTOR, LABEL) as an instant query listing LABEL's values."""
    for v in dash["templating"]["list"]:
        if v.get("name") == name:
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else q
            m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", q)
            if not m:
                sys.exit(f"variable {name}: not a label_values() query: {q}")
            return f"group by ({m.group(2)}) ({substitute(m.group(1))})"
    sys.exit(f"the dashboard has no variable {name}")


def main():
    promtool, dashboard = sys.argv[1], sys.argv[2]
    with open(dashboard, encoding="utf-8") as f:
        dash = json.load(f)
    agents = [p for p in panels(dash) if p.get("title") == "Agents up"]
    if len(agents) != 1 or len(agents[0].get("targets", [])) != 1:
        sys.exit('the dashboard needs one "Agents up" panel with one query')
    agents_up = substitute(agents[0]["targets"][0]["expr"])
    series = []
    for router, up, ballast_up in (
        ("r1", "1x5", "1x5"),
        ("r2", "1 1 0 0 0 0", "1 1 stale"),
        ("r3", "1x5", "0x5"),
    ):
        labels = f'job="{JOB}",instance="{router}:9580",router="{router}"'
        series.append({"series": f"up{{{labels}}}", "values": up})
        series.append({"series": f"ballast_up{{{labels}}}", "values": ballast_up})
    test = {
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": series,
            "promql_expr_test": [
                {"expr": agents_up, "eval_time": "4m",
                 "exp_samples": [{"labels": f'{{router="{r}"}}', "value": v}
                                 for r, v in (("r1", 1), ("r2", 0), ("r3", 0))]},
                {"expr": variable_expr(dash, "router"), "eval_time": "4m",
                 "exp_samples": [{"labels": f'{{router="{r}"}}', "value": 1}
                                 for r in ("r1", "r2", "r3")]},
            ],
        }],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yml", encoding="utf-8") as f:
        json.dump(test, f)  # YAML is a superset of JSON
        f.flush()
        r = subprocess.run([promtool, "test", "rules", f.name], capture_output=True, text=True)
    print(f"dashboard_queries: Agents up = {agents_up}")
    print(f"dashboard_queries: $router = {variable_expr(dash, 'router')}")
    print(r.stdout + r.stderr)
    return 0 if r.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
