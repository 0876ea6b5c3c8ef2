#!/usr/bin/env python3
"""What tests/e2e/attack_suite.sh checks after each hostile class, and what
it watches while they are sent (issue 41).

  delta BEFORE AFTER SENT --expect 'COUNTER OP EXPR' ... [--summary FILE]
      BEFORE, AFTER: counter snapshots ("name value" lines: the router's
      verdicts and backend counters from its metrics, each backend's decap
      counters prefixed decap_); SENT: attack_send.py's JSON. Each --expect
      compares a counter's change with an expression over the sub-classes
      sent and other counters' changes (d_NAME) (OP: ==, >=, <=); prints one line per expectation, "ok ..." or
      "FAIL ...", then "info ..." with every counter that moved. --summary
      appends the class's row (JSON) for the suite's table.
  watch --lbctl BIN --socket SOCK --out FILE --seconds S
      samples `lbctl --json status` every 0.25 s until SIGTERM or S
      seconds: for every backend of every VIP its health, effective weight
      (against the first sample), the pool's freeze and the health
      conditions; writes a JSON summary to FILE.
  audit --lbctl BIN --socket SOCK --since-ms T
      the audit records since T (unix ms), judged: automation actions, and
      score changes that were re-weightings or carried passive evidence.
"""
import argparse
import json
import re
import signal
import subprocess
import sys
import time

# Sums of the verdicts that come in a TX and a REDIRECT flavour.
ALIASES = {
    "forwarded": ("tx", "redirect"),
    "guarded": ("guarded_tx", "guarded_redirect"),
    "bounce_sent": ("bounce_tx", "bounce_redirect"),
    "icmp_fwd": ("icmp_fwd_tx", "icmp_fwd_redirect"),
    "esc": ("esc_tx", "esc_redirect"),
}
# Health conditions that the hostile packets would cause if they moved the
# health logic (agent/health/machine.cc Conditions); probe_latency_ms_high
# and drift_from_baseline also come from a loaded machine's probe latency.
PASSIVE = re.compile(r"^(syn_retransmit_ratio|client_rst_ratio|incomplete_handshake_ratio|"
                     r"unanswered_ratio|handshake_ms|first_response_ms)_high$")
AUTOMATION = {"demote", "promote", "ramp_step", "ramp_back", "freeze", "unfreeze", "pin",
              "release", "disagreement", "disagreement_cleared"}


def read_snap(path):
    out = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = out.get(parts[0], 0) + int(float(parts[1]))
    for alias, names in ALIASES.items():
        out[alias] = sum(out.get(n, 0) for n in names)
    return out


def delta(a):
    before, after = read_snap(a.before), read_snap(a.after)
    sent = json.load(open(a.sent))
    subs = sent["sent"]
    d = {k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after)}
    ok = True
    row = {"class": sent["class"], "sent": sum(subs.values()), "subs": subs, "counted": {}}
    if sent.get("tx_dropped"):
        print("FAIL %s: the sending device dropped %d of %d frames before the router saw them "
              "(the lab, not ballast; counts below are short)" % (sent["class"], sent["tx_dropped"],
                                                                  sent["frames"]))
        ok = False
    for e in a.expect:
        m = re.match(r"^\s*([a-z0-9_]+)\s*(==|>=|<=)\s*(.+)$", e)
        if not m:
            sys.exit("attack_check: bad --expect '%s'" % e)
        counter, op, expr = m.groups()
        names = {k: 0 for k in re.findall(r"[a-z_][a-z0-9_]*", expr)}  # a sub-class not sent: 0
        names.update({"d_" + k: v for k, v in d.items()})  # d_COUNTER: another counter's change
        names.update(subs)
        want = eval(expr, {"__builtins__": {}}, names)
        got = d.get(counter, 0)
        good = {"==": got == want, ">=": got >= want, "<=": got <= want}[op]
        ok &= good
        print("%s %s: %s %+d (expected %s %d: %s)" % ("ok" if good else "FAIL", sent["class"], counter,
                                                     got, op, want, expr.strip()))
        row["counted"][counter] = got
    moved = " ".join("%s=%+d" % (k, v) for k, v in sorted(d.items()) if v and k not in ALIASES)
    print("info %s: sent %s; counters moved: %s" % (sent["class"], json.dumps(subs, sort_keys=True), moved))
    if a.summary:
        with open(a.summary, "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    return 0 if ok else 1


def lbctl_status(a):
    r = subprocess.run([a.lbctl, "--socket", a.socket, "--json", "status"], capture_output=True,
                       text=True, timeout=5)
    if r.returncode:
        return None
    return json.loads(r.stdout)


def vip_text(k):
    a = k["address"]
    return ("[%s]" % a if ":" in a else a) + ":%s/%s" % (k.get("port", 0), k["protocol"].lower())


def watch(a):
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    base, samples, failed_reads = None, 0, 0
    bad, conditions = [], {}
    end = time.time() + a.seconds
    while not stop["now"] and time.time() < end:
        t = time.time()
        st = lbctl_status(a)
        if st is None:
            failed_reads += 1
        else:
            samples += 1
            cur = {}
            for v in st.get("vips", []):
                vt = vip_text(v["key"])
                if v.get("frozen", False):
                    bad.append("%.3f %s frozen" % (t, vt))
                for b in v.get("backends", []):
                    name = "%s %s" % (vt, b["address"])
                    cur[name] = b.get("effectiveWeight", 0)
                    if b.get("health") != "healthy":
                        bad.append("%.3f %s health %s" % (t, name, b.get("health")))
                    for c in b.get("conditions", []):
                        conditions.setdefault(c, set()).add(name)
                        if PASSIVE.match(c) or c in ("refused_syns", "frozen"):
                            bad.append("%.3f %s condition %s (score %s)" % (t, name, c, b.get("score")))
            if base is None:
                base = cur
            for name, w in cur.items():
                if base.get(name) != w:
                    bad.append("%.3f %s effective weight %s -> %s" % (t, name, base.get(name), w))
        left = 0.25 - (time.time() - t)
        if left > 0:
            time.sleep(left)
    with open(a.out, "w") as f:
        json.dump({"samples": samples, "failed_reads": failed_reads, "bad": bad,
                   "conditions": {c: sorted(n) for c, n in conditions.items()}}, f, sort_keys=True)


def audit(a):
    r = subprocess.run([a.lbctl, "--socket", a.socket, "--json", "audit", "--since", "10m"],
                       capture_output=True, text=True, timeout=10)
    if r.returncode:
        print("FAIL audit: lbctl audit failed: %s" % r.stderr.strip()[:300])
        return 1
    n = moves = 0
    for rec in json.loads(r.stdout).get("records", []):
        if int(rec["unixMs"]) < a.since_ms:
            continue
        n += 1
        what = "%s %s %s %s" % (rec["unixMs"], rec["action"], rec.get("vip", ""), rec.get("backend", ""))
        if rec["action"] in AUTOMATION:
            print("move %s" % what)
            moves += 1
            continue
        if rec["action"] != "score_band":
            print("other %s" % what)
            continue
        i = json.loads(rec.get("inputsJson") or "{}")
        if i.get("state") != "healthy":
            print("move %s state %s (score %s -> %s)" % (what, i.get("state"), i.get("previous_score"),
                                                        i.get("score")))
            moves += 1
        if i.get("effective_weight") != i.get("nominal_weight") or i.get("ramp_percent", 100) != 100:
            print("move %s re-weighted: effective %s of nominal %s" % (
                what, i.get("effective_weight"), i.get("nominal_weight")))
            moves += 1
        passive = {k: v for k, v in i.get("passive", {}).get("signals", {}).items()
                   if isinstance(v, dict) and v.get("penalty", 0) > 0}
        if passive or i.get("passive", {}).get("interval", {}).get("refused_syns", 0):
            print("move %s score %s -> %s on passive evidence %s" % (
                what, i.get("previous_score"), i.get("score"), json.dumps(
                    passive or i["passive"]["interval"], sort_keys=True)[:400]))
            moves += 1
        else:
            print("noise %s score %s -> %s (probe latency, no passive evidence)" % (
                what, i.get("previous_score"), i.get("score")))
    print("records %d moves %d" % (n, moves))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("delta")
    d.add_argument("before")
    d.add_argument("after")
    d.add_argument("sent")
    d.add_argument("--expect", action="append", default=[])
    d.add_argument("--summary")
    for name in ("watch", "audit"):
        w = sub.add_parser(name)
        w.add_argument("--lbctl", required=True)
        w.add_argument("--socket", required=True)
        if name == "watch":
            w.add_argument("--out", required=True)
            w.add_argument("--seconds", type=float, required=True)
        else:
            w.add_argument("--since-ms", type=int, required=True)
    a = ap.parse_args()
    sys.exit({"delta": delta, "watch": watch, "audit": audit}[a.cmd](a) or 0)


if __name__ == "__main__":
    main()
