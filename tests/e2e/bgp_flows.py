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
      checking the answer; stops after --seconds or on SIGTERM (graceful
      FIN). Prints a JSON summary: per connection its backend, backend
      changes, resets, timeouts, errors, answers and the longest gap between
      answers; and totals.

Only lab addresses (198.18.0.0/15, 2001:db8::/32) are accepted.
"""
import argparse
import ipaddress
import json
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
        self.r = {"port": port, "backend": None, "backend_changes": 0, "resets": 0,
                  "timeouts": 0, "errors": [], "answers": 0, "max_gap_s": 0.0}

    def run(self):
        a, r = self.args, self.r
        try:
            s = new_socket(a.addr, a.src, self.port, a.timeout)
            s.connect((a.addr, 80))
        except OSError as e:
            r["errors"].append("connect:%s" % (e.strerror or e.errno))
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
                    return
                name, _, rest = line.decode(errors="replace").strip().partition(" ")
                if rest != "seq %d" % seq:
                    r["errors"].append("bad answer %r at seq %d" % (line[:60], seq))
                    return
                now = time.monotonic()
                r["max_gap_s"] = max(r["max_gap_s"], round(now - last, 3))
                last = now
                r["answers"] += 1
                if r["backend"] is None:
                    r["backend"] = name
                elif name != r["backend"]:
                    r["backend_changes"] += 1
                    r["backend"] = name
                self.stop.wait(a.interval)
            s.shutdown(socket.SHUT_WR)
            s.close()
        except ConnectionResetError:
            r["resets"] += 1
        except socket.timeout:
            r["timeouts"] += 1
        except OSError as e:
            r["errors"].append("io:%s" % (e.strerror or e.errno))


def hold(args):
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    conns = [Conn(args, args.port_base + i, stop) for i in range(args.conns)]
    for c in conns:
        c.start()
    deadline = time.monotonic() + args.seconds
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
    }
    json.dump({"total": total, "conns": res}, sys.stdout, sort_keys=True)
    print()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    f = sub.add_parser("fixed")
    f.add_argument("--ports", required=True)
    h = sub.add_parser("hold")
    h.add_argument("--conns", type=int, default=40)
    h.add_argument("--port-base", type=int, default=41000)
    h.add_argument("--seconds", type=float, default=20)
    h.add_argument("--interval", type=float, default=0.1)
    for sp in (f, h):
        sp.add_argument("--addr", required=True)
        sp.add_argument("--src", default="")
        sp.add_argument("--timeout", type=float, default=3)
    args = p.parse_args()
    lab_only(args.addr)
    if args.src:
        lab_only(args.src)
    fixed(args) if args.mode == "fixed" else hold(args)


if __name__ == "__main__":
    main()
