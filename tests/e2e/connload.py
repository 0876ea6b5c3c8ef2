#!/usr/bin/env python3
"""Continuous new-connection load for the health e2e tests.

Each worker opens a fresh TCP connection per request (HTTP/1.1,
Connection: close), for a bounded time, and records one line per attempt:

    <unix time of the attempt's start> <ok 0|1> <backend name or error>

`backend` is parsed from the test backend's (or nginx's) answer. The run
stops by itself after --seconds; SIGTERM stops it early. At the end a JSON
summary goes to stdout: attempts, ok, failed, failures by error, answers by
backend; for fresh connections also the longest connect time, the 99th
percentile and how many took 1 s or more (a retransmitted SYN).

Only for lab addresses (198.18.0.0/15, 2001:db8::/32): anything else is
refused.
"""
import argparse
import ipaddress
import json
import signal
import socket
import sys
import threading
import time

LAB_NETS = [ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:db8::/32")]


def one(addr, port, host_header, timeout, connect_times):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        t0 = time.time()
        try:
            s.connect((addr, port))
        except socket.timeout:
            return False, "connect_timeout"
        connect_times.append(time.time() - t0)  # list.append is atomic
        s.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nUser-Agent: connload\r\n"
                   "Connection: close\r\n\r\n" % host_header).encode())
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/") else "?"
        if status != "200":
            return False, "http_%s" % status
        name = body.decode(errors="replace").strip()
        if name.startswith("backend "):
            name = name[len("backend "):]
        return True, name or "empty"
    except socket.timeout:
        return False, "timeout"
    except ConnectionRefusedError:
        return False, "refused"
    except ConnectionResetError:
        return False, "reset"
    except OSError as e:
        return False, "oserror_%s" % (e.errno,)
    finally:
        s.close()


class KeepAlive:
    """One persistent HTTP/1.1 connection; reconnects after an error."""

    def __init__(self, addr, port, timeout):
        self.addr, self.port, self.timeout = addr, port, timeout
        self.sock = None
        self.conn_id = 0
        self.buf = b""

    def request(self):
        fam = socket.AF_INET6 if ":" in self.addr else socket.AF_INET
        try:
            if self.sock is None:
                self.sock = socket.socket(fam, socket.SOCK_STREAM)
                self.sock.settimeout(self.timeout)
                self.conn_id += 1
                self.buf = b""
                try:
                    self.sock.connect((self.addr, self.port))
                except OSError as e:
                    # A connection never made, apart from one made and cut.
                    self.close()
                    kind = {socket.timeout: "timeout", ConnectionRefusedError: "refused",
                            ConnectionResetError: "reset"}.get(type(e), "oserror_%s" % (e.errno,))
                    return False, "connect_" + kind
            self.sock.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nUser-Agent: connload\r\n\r\n"
                               % self.addr).encode())
            while b"\r\n\r\n" not in self.buf:
                chunk = self.sock.recv(4096)
                if not chunk:
                    raise ConnectionResetError()
                self.buf += chunk
            head, _, rest = self.buf.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            while len(rest) < length:
                chunk = self.sock.recv(4096)
                if not chunk:
                    raise ConnectionResetError()
                rest += chunk
            body, self.buf = rest[:length], rest[length:]
            status = head.split(b" ", 2)[1].decode()
            if status != "200":
                return False, "http_%s" % status
            name = body.decode(errors="replace").strip()
            if name.startswith("backend "):
                name = name[len("backend "):]
            return True, name
        except socket.timeout:
            self.close()
            return False, "timeout"
        except (ConnectionResetError, BrokenPipeError):
            self.close()
            return False, "reset"
        except OSError as e:
            self.close()
            return False, "oserror_%s" % (e.errno,)

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=1.0)
    ap.add_argument("--rate", type=float, default=0, help="attempts/s per worker (0 = as fast as possible)")
    ap.add_argument("--log", required=True)
    ap.add_argument("--keepalive", action="store_true",
                    help="one persistent connection per worker (reconnects after an error); "
                         "log lines gain the worker and connection number")
    a = ap.parse_args()
    ip = ipaddress.ip_address(a.addr)
    if not any(ip in n for n in LAB_NETS):
        sys.exit("connload: %s is not a lab address (198.18.0.0/15, 2001:db8::/32)" % a.addr)
    if not 0 < a.seconds <= 600:
        sys.exit("connload: --seconds must be in (0, 600]")

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    lock = threading.Lock()
    lines = []
    connect_times = []  # seconds, of the fresh connections that were made
    end = time.time() + a.seconds

    def worker(n):
        gap = 1.0 / a.rate if a.rate > 0 else 0
        ka = KeepAlive(a.addr, a.port, a.timeout) if a.keepalive else None
        while not stop.is_set() and time.time() < end:
            t0 = time.time()
            if ka is not None:
                ok, what = ka.request()
                what = "%s w%d.c%d" % (what, n, ka.conn_id)
            else:
                ok, what = one(a.addr, a.port, a.addr, a.timeout, connect_times)
            with lock:
                lines.append("%.6f %d %s" % (t0, 1 if ok else 0, what))
            if gap:
                left = gap - (time.time() - t0)
                if left > 0:
                    stop.wait(left)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(a.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines.sort()
    with open(a.log, "w") as f:
        f.write("\n".join(lines) + ("\n" if lines else ""))
    summary = {"attempts": len(lines), "ok": 0, "failed": 0, "errors": {}, "backends": {}}
    for line in lines:
        _, ok, what = line.split(" ", 2)
        what = what.split(" ")[0]
        if ok == "1":
            summary["ok"] += 1
            summary["backends"][what] = summary["backends"].get(what, 0) + 1
        else:
            summary["failed"] += 1
            summary["errors"][what] = summary["errors"].get(what, 0) + 1
    if connect_times:
        ct = sorted(connect_times)
        summary["connect_ms_max"] = round(ct[-1] * 1000, 1)
        summary["connect_ms_p99"] = round(ct[min(len(ct) - 1, int(len(ct) * 0.99))] * 1000, 1)
        # a connection that needed a SYN retransmission (Linux: after 1 s)
        summary["connects_over_1s"] = sum(1 for t in ct if t >= 1.0)
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
