#!/usr/bin/env python3
"""Client side of the BGP/ECMP end-to-end tests (tests/e2e/bgp_*.sh).

Talks to the ECMP lab's backend server (tools/lab/ecmp): an HTTP GET is
answered with the backend's name; any other first line starts an echo
session where every line comes back as "<name> <line>".

  bgp_flows.py fixed --addr VIP --ports 40000-40063 [--src ADDR]
      one short connection per source port (the same 5-tuple every run);
      closes with RST so no TIME_WAIT blocks the next run on the same port.
      Prints JSON {"<port>": "<backend>" or "error:<what>"}.

  bgp_flows.py hold --addr VIP --conns 40 --port-base 41000 --seconds 20
      long-lived connections, each sending "seq N" every --interval and
      checking the answer; stops after --seconds or on SIGTERM or SIGINT
      (graceful FIN), whichever comes first. Prints a JSON summary: per
      connection the backend it started on ("first_backend") and the one it
      ended on ("backend"), backend changes, resets, timeouts, errors,
      answers, the longest gap between answers, and the wall-clock time
      (epoch seconds) of its first answer and of its failure, if any; and
      totals. --ready-file F: once every connection has connected (or
      failed to) and got its first answer, F is written (JSON: connected,
      failed) so a caller knows when the connections are established.

  bgp_flows.py summary [--table-at T] [--router-at T] HOLD.json...
      sums hold outputs into one shell-readable line (conns, alive_to_end,
      failed, resets, timeouts, errors, moved, backend_changes, max_gap_s,
      answers, and with the epoch times of a table change and a router
      change, how many connections failed before the table change, between
      the two, and after the router change) and prints the first few failed
      or moved connections to stderr.

Only lab addresses (198.18.0.0/15, 2001:db8::/32) are accepted.
"""
import argparse
import ipaddress
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

LAB_NETS = [ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:db8::/32")]


def lab_only(addr):
    ip = ipaddress.ip_address(addr)
    if not any(ip in n for n in LAB_NETS):
        sys.exit("bgp_flows.py: %s is not a lab address" % addr)
    return addr


def new_socket(addr, src, sport, timeout):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.settimeout(timeout)
    s.bind((src or ("::" if fam == socket.AF_INET6 else "0.0.0.0"), sport))
    return s


def rst_close(s):
    # SO_LINGER {on, 0}: close() sends RST, leaving no TIME_WAIT behind.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def fixed(args):
    lo, hi = (int(x) for x in args.ports.split("-"))
    out = {}
    for port in range(lo, hi + 1):
        s = None
        try:
            s = new_socket(args.addr, args.src, port, args.timeout)
            s.connect((args.addr, 80))
            s.sendall(b"GET / HTTP/1.1\r\nHost: vip\r\nConnection: close\r\n\r\n")
            data = b""
            while not data.endswith(b"\n") or b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            body = data.partition(b"\r\n\r\n")[2].decode(errors="replace").strip()
            out[str(port)] = body or "error:empty"
        except socket.timeout:
            out[str(port)] = "error:timeout"
        except ConnectionResetError:
            out[str(port)] = "error:reset"
        except OSError as e:
            out[str(port)] = "error:%s" % (e.strerror or e.errno)
        finally:
            if s is not None:
                rst_close(s)
    json.dump(out, sys.stdout, sort_keys=True)
    print()


class Conn(threading.Thread):
    def __init__(self, args, port, stop):
        super().__init__(daemon=True)
        self.args, self.port, self.stop = args, port, stop
        self.r = {"port": port, "backend": None, "first_backend": None, "backend_changes": 0,
                  "resets": 0, "timeouts": 0, "errors": [], "answers": 0, "max_gap_s": 0.0,
                  "first_answer_at": None, "failed_at": None}
        self.settled = threading.Event()  # connected and answered once, or failed

    def failed(self):
        self.r["failed_at"] = round(time.time(), 3)

    def run(self):
        a, r = self.args, self.r
        try:
            self.session()
        finally:
            self.settled.set()

    def session(self):
        a, r = self.args, self.r
        try:
            s = new_socket(a.addr, a.src, self.port, a.timeout)
            s.connect((a.addr, 80))
        except OSError as e:
            r["errors"].append("connect:%s" % (e.strerror or e.errno))
            self.failed()
            return
        f = s.makefile("rb")
        seq = 0
        last = time.monotonic()
        try:
            while not self.stop.is_set():
                seq += 1
                s.sendall(b"seq %d\n" % seq)
                line = f.readline()
                if not line:
                    r["errors"].append("closed by peer at seq %d" % seq)
                    self.failed()
                    return
                name, _, rest = line.decode(errors="replace").strip().partition(" ")
                if rest != "seq %d" % seq:
                    r["errors"].append("bad answer %r at seq %d" % (line[:60], seq))
                    self.failed()
                    return
                now = time.monotonic()
                r["max_gap_s"] = max(r["max_gap_s"], round(now - last, 3))
                last = now
                r["answers"] += 1
                if r["backend"] is None:
                    r["backend"] = r["first_backend"] = name
                    r["first_answer_at"] = round(time.time(), 3)
                    self.settled.set()
                elif name != r["backend"]:
                    r["backend_changes"] += 1
                    r["backend"] = name
                self.stop.wait(a.interval)
            s.shutdown(socket.SHUT_WR)
            s.close()
        except ConnectionResetError:
            r["resets"] += 1
            self.failed()
        except socket.timeout:
            r["timeouts"] += 1
            self.failed()
        except OSError as e:
            r["errors"].append("io:%s" % (e.strerror or e.errno))
            self.failed()


def hold(args):
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    conns = [Conn(args, args.port_base + i, stop) for i in range(args.conns)]
    deadline = time.monotonic() + args.seconds
    for c in conns:
        c.start()
    if args.ready_file:
        for c in conns:
            while not c.settled.wait(0.05) and time.monotonic() < deadline and not stop.is_set():
                pass
        ok = sum(1 for c in conns if c.r["answers"] > 0)
        with open(args.ready_file + ".tmp", "w") as f:
            json.dump({"connected": ok, "failed": len(conns) - ok}, f)
        os.rename(args.ready_file + ".tmp", args.ready_file)
    while time.monotonic() < deadline and not stop.is_set():
        time.sleep(0.05)
    stop.set()
    for c in conns:
        c.join(args.timeout + 2)
    res = [c.r for c in conns]
    total = {
        "conns": len(res),
        "resets": sum(r["resets"] for r in res),
        "timeouts": sum(r["timeouts"] for r in res),
        "errors": sum(len(r["errors"]) for r in res),
        "backend_changes": sum(r["backend_changes"] for r in res),
        "answers": sum(r["answers"] for r in res),
        "max_gap_s": max((r["max_gap_s"] for r in res), default=0),
        "alive_to_end": sum(1 for r in res if not r["errors"] and not r["resets"]
                            and not r["timeouts"] and r["answers"] > 0),
        "moved": sum(1 for r in res if r["first_backend"] != r["backend"]),
    }
    json.dump({"total": total, "conns": res}, sys.stdout, sort_keys=True)
    print()


def summary(args):
    t = {"conns": 0, "alive_to_end": 0, "failed": 0, "resets": 0, "timeouts": 0, "errors": 0,
         "moved": 0, "backend_changes": 0, "max_gap_s": 0.0, "answers": 0,
         "failed_before_table": 0, "failed_after_table": 0, "failed_after_router": 0}
    started = {}
    shown = 0
    for path in args.files:
        with open(path) as f:
            d = json.load(f)
        for k in ("conns", "alive_to_end", "resets", "timeouts", "errors", "moved",
                  "backend_changes", "answers"):
            t[k] += d["total"][k]
        t["max_gap_s"] = max(t["max_gap_s"], d["total"]["max_gap_s"])
        for c in d["conns"]:
            b = c.get("first_backend") or "none"
            started[b] = started.get(b, 0) + 1
            bad = c["errors"] or c["resets"] or c["timeouts"] or not c["answers"]
            if bad:
                t["failed"] += 1
                at = c.get("failed_at") or 0
                if args.router_at and at >= args.router_at:
                    t["failed_after_router"] += 1
                elif args.table_at and at >= args.table_at:
                    t["failed_after_table"] += 1
                else:
                    t["failed_before_table"] += 1
            if (bad or c.get("first_backend") != c.get("backend")) and shown < args.show:
                shown += 1
                at = c.get("failed_at")
                if at and args.router_at:
                    at = "%+.2f s from the router change" % (at - args.router_at)
                print("  %s port %d: started on %s, ended on %s, resets %d, timeouts %d, errors %s, "
                      "answers %d, longest gap %.3f s, failed at %s" % (
                          path.rsplit("/", 1)[-1], c["port"], c.get("first_backend"), c.get("backend"),
                          c["resets"], c["timeouts"], c["errors"], c["answers"], c["max_gap_s"],
                          at or "-"), file=sys.stderr)
    t["started_on"] = ",".join("%s:%d" % kv for kv in sorted(started.items()))
    print(" ".join("%s=%s" % kv for kv in t.items()))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    sm = sub.add_parser("summary")
    sm.add_argument("--table-at", type=float, default=0)
    sm.add_argument("--router-at", type=float, default=0)
    sm.add_argument("--show", type=int, default=8)
    sm.add_argument("files", nargs="+")
    f = sub.add_parser("fixed")
    f.add_argument("--ports", required=True)
    h = sub.add_parser("hold")
    h.add_argument("--conns", type=int, default=40)
    h.add_argument("--port-base", type=int, default=41000)
    h.add_argument("--seconds", type=float, default=20)
    h.add_argument("--interval", type=float, default=0.1)
    h.add_argument("--ready-file", default="")
    for sp in (f, h):
        sp.add_argument("--addr", required=True)
        sp.add_argument("--src", default="")
        sp.add_argument("--timeout", type=float, default=3)
    args = p.parse_args()
    if args.mode == "summary":
        summary(args)
        return
    lab_only(args.addr)
    if args.src:
        lab_only(args.src)
    fixed(args) if args.mode == "fixed" else hold(args)


if __name__ == "__main__":
    main()
