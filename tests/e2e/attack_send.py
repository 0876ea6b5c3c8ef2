#!/usr/bin/python3
"""Hostile packets for tests/e2e/attack_suite.sh (issue 41), and the
long-lived connections they must not move.

Subcommands (each bounded in count and time, for lab addresses only):

  hold CTX --seconds S --out FILE --ready FILE
      opens CTX's connections (keep-alive HTTP/1.1 to the VIPs), writes
      their tuples to --ready once each has answered, then asks each for a
      page every --period s until S have passed or SIGTERM; --out gets, per
      connection, the backend that answered first, every backend that
      answered, the requests answered and the errors (a reset, a timeout).
  build CTX --dir DIR
      builds the packets of every hostile class once (scapy; the classes
      and their counts are PLAN below) into DIR: NAME.bin, NAME.json.
  replay CTX --dir DIR --name NAME --iface DEV --dst-mac MAC
      sends one built class on DEV with a raw packet socket, paced, and
      prints a JSON object: {"class", "sent": {sub-class: packets},
      "frames", "tx_dropped": frames the sending device dropped}.
  storm CTX --count N --rate R --port P
      N real connection attempts to VIP4:P (a fresh source port each) at R
      per second; prints {"attempts", "refused", "errors", "max_ms"}.

CTX is a JSON file written by the test: addresses, backends and the live
flows (tuple, the router's seq_next, backend address).

Sources of the spoofed strangers are 198.19.0.0/16 and 2001:db8:ffff::/48,
which nothing in the lab routes: what backends answer them ends at the
router. Needs scapy (Debian python3-scapy, tools/setup.sh).
"""
import argparse
import errno
import ipaddress
import json
import os
import random
import signal
import socket
import sys
import time

LAB_NETS = [ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:db8::/32")]

# Outer marks that are never a bounce tag (bpf/lib/mark.h: a tag equal to the
# last-hop mark is changed), so a forged bounce carrying one is refused
# whatever the router's key: the counts stay exact.
NOT_A_TAG_ID = 0xBA11
NOT_A_TAG_LABEL = 0xFFFFF
SEQ_WINDOW = 256 * 1024  # BALLAST_SEQ_WINDOW


def lab_only(*addrs):
    for a in addrs:
        ip = ipaddress.ip_address(a)
        if not any(ip in n for n in LAB_NETS):
            sys.exit("attack_send: %s is not a lab address (198.18.0.0/15, 2001:db8::/32)" % a)


def stranger4(rng):
    return "198.19.%d.%d" % (rng.randrange(0, 256), rng.randrange(1, 255))


def stranger6(rng):
    return "2001:db8:ffff::%x:%x" % (rng.randrange(1, 0xFFFF), rng.randrange(1, 0xFFFF))


# ---- hold ------------------------------------------------------------------------------------
class Conn:
    def __init__(self, family, addr, port, timeout):
        fam = socket.AF_INET6 if family == 6 else socket.AF_INET
        self.family, self.addr = family, addr
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect((addr, port))
        self.sport = self.sock.getsockname()[1]
        self.buf = b""
        self.first = None
        self.seen = {}
        self.ok = 0
        self.errors = []
        self.dead = False

    def request(self):
        """One GET on the connection: the backend's name, or raises."""
        self.sock.sendall(b"GET / HTTP/1.1\r\nHost: attack\r\nUser-Agent: attack-hold\r\n\r\n")
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionResetError("closed by the peer")
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
                raise ConnectionResetError("closed by the peer")
            rest += chunk
        body, self.buf = rest[:length], rest[length:]
        if not head.startswith(b"HTTP/1.1 200"):
            raise OSError("http status %r" % head[:20])
        name = body.decode(errors="replace").strip()
        return name[len("backend "):] if name.startswith("backend ") else name

    def step(self, t):
        if self.dead:
            return
        try:
            name = self.request()
        except socket.timeout:
            self.errors.append("%.3f timeout" % t)
            return  # a late answer is still read by the next request
        except ConnectionResetError as e:
            self.errors.append("%.3f reset %s" % (t, e))
            self.dead = True
            return
        except OSError as e:
            self.errors.append("%.3f %s" % (t, e))
            self.dead = True
            return
        self.ok += 1
        self.first = self.first or name
        self.seen[name] = self.seen.get(name, 0) + 1


def hold(ctx, a):
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    if a.pidfile:
        with open(a.pidfile, "w") as f:
            f.write("%d\n" % os.getpid())
    conns = []
    for family, n in ((4, a.conns4), (6, a.conns6)):
        vip = ctx["vip4"] if family == 4 else ctx["vip6"]
        for _ in range(n):
            conns.append(Conn(family, vip, 80, a.timeout))
    for c in conns:
        c.step(time.time())
    if any(c.ok != 1 for c in conns):
        sys.exit("attack_send hold: a connection did not answer its first request: %s" %
                 [c.errors for c in conns if c.errors])
    with open(a.ready + ".tmp", "w") as f:
        json.dump([{"family": c.family, "sport": c.sport, "backend": c.first} for c in conns], f)
    os.rename(a.ready + ".tmp", a.ready)
    end = time.time() + a.seconds
    rounds = 1
    while not stop["now"] and time.time() < end:
        t0 = time.time()
        for c in conns:
            c.step(t0)
        rounds += 1
        left = a.period - (time.time() - t0)
        if left > 0:
            time.sleep(left)
    out = {"rounds": rounds, "conns": [{
        "family": c.family, "sport": c.sport, "first": c.first, "seen": c.seen, "ok": c.ok,
        "errors": c.errors} for c in conns]}
    for c in conns:
        c.sock.close()
    with open(a.out, "w") as f:
        json.dump(out, f)


# ---- context --------------------------------------------------------------------------------
def find_key(obj, name):
    """The first value of key `name` anywhere in bpftool's formatted JSON
    (an anonymous union nests seq_next under "" keys)."""
    if isinstance(obj, dict):
        if name in obj:
            return obj[name]
        for v in obj.values():
            r = find_key(v, name)
            if r is not None:
                return r
    return None


def flows_of_dump(dump):
    """(family, client address, client port) -> the `flows` value, from
    `bpftool -j map dump` of the `flows` map (ports in network order)."""
    out = {}
    for e in dump:
        k, v = e["formatted"]["key"], e["formatted"]["value"]
        fam = k["family"]
        addr = ipaddress.ip_address(bytes(k["src"][:4] if fam == 4 else k["src"]))
        port = ((k["sport"] & 0xFF) << 8) | (k["sport"] >> 8)
        out[(fam, str(addr), port)] = v
    return out


def context(ctx, a):
    """Adds the live flows (from --ready) to CTX: each with the router's
    seq_next and its backend's address; every one must be in `flows`."""
    with open(a.ready) as f:
        conns = json.load(f)
    with open(a.dump) as f:
        flows = flows_of_dump(json.load(f))
    ctx["flows"] = []
    missing = []
    for c in conns:
        fam = c["family"]
        client = ctx["client4"] if fam == 4 else ctx["client6"]
        v = flows.get((fam, str(ipaddress.ip_address(client)), c["sport"]))
        if v is None or find_key(v, "seq_next") is None:
            missing.append("%s:%d" % (client, c["sport"]))
            continue
        i = int(c["backend"].rsplit("-", 1)[1])
        ctx["flows"].append({"family": fam, "sport": c["sport"], "seq_next": find_key(v, "seq_next"),
                             "state": v["state"], "backend_id": v["backend_id"],
                             "backend": c["backend"],
                             "backend_addr": (ctx["backends4"] if fam == 4 else ctx["backends6"])[i - 1]})
    if missing:
        sys.exit("attack_send context: %d live connections are not in `flows`: %s" %
                 (len(missing), " ".join(missing)))
    json.dump(ctx, sys.stdout, indent=1)


def spoofed_in(ctx, a):
    """Counts the entries of a `flows` dump (--dump) whose client is a
    spoofed stranger (198.19.0.0/16, 2001:db8:ffff::/48), by family."""
    with open(a.dump) as f:
        flows = flows_of_dump(json.load(f))
    nets = {4: ipaddress.ip_network("198.19.0.0/16"), 6: ipaddress.ip_network("2001:db8:ffff::/48")}
    n = {4: 0, 6: 0}
    for fam, addr, _ in flows:
        if ipaddress.ip_address(addr) in nets[fam]:
            n[fam] += 1
    print(n[4], n[6])


# ---- storm -----------------------------------------------------------------------------------
def storm(ctx, a):
    res = {"attempts": 0, "refused": 0, "errors": {}, "max_ms": 0.0}
    gap = 1.0 / a.rate
    t_next = time.time()
    for _ in range(a.count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(a.timeout)
        t0 = time.time()
        try:
            s.connect((ctx["vip4"], a.port))
            what = "connected"
        except ConnectionRefusedError:
            what = "refused"
        except socket.timeout:
            what = "timeout"
        except OSError as e:
            what = errno.errorcode.get(e.errno, str(e.errno))
        finally:
            s.close()
        ms = (time.time() - t0) * 1000
        res["attempts"] += 1
        res["max_ms"] = max(res["max_ms"], round(ms, 1))
        if what == "refused":
            res["refused"] += 1
        else:
            res["errors"][what] = res["errors"].get(what, 0) + 1
        t_next += gap
        left = t_next - time.time()
        if left > 0:
            time.sleep(left)
    print(json.dumps(res, sort_keys=True))


# ---- packets ---------------------------------------------------------------------------------
def scapy():
    import scapy.all as S  # noqa: N812 (the one import of scapy, slow: only for `send`)
    S.conf.verb = 0
    return S


class Builder:
    """Packets of each class; `self.sent` counts them by sub-class."""

    def __init__(self, S, ctx, rng, backend=1):
        self.S, self.ctx, self.rng, self.backend = S, ctx, rng, backend
        self.frames, self.sent = [], {}

    def add(self, sub, pkt, raw=None):
        """Appends an L3 packet (scapy), or `raw` bytes for headers scapy
        would mend (lengths, offsets)."""
        self.frames.append(bytes(pkt) if raw is None else raw)
        self.sent[sub] = self.sent.get(sub, 0) + 1

    def ip(self, family, src, dst, **kw):
        S = self.S
        if family == 4:
            return S.IP(src=src, dst=dst, **kw)
        kw6 = {}
        if "id" in kw:
            kw6["fl"] = kw.pop("id")
        if "proto" in kw:
            kw6["nh"] = kw.pop("proto")
        return S.IPv6(src=src, dst=dst, **kw6)

    def vip(self, family):
        return self.ctx["vip4"] if family == 4 else self.ctx["vip6"]

    def client(self, family):
        return self.ctx["client4"] if family == 4 else self.ctx["client6"]

    def stranger(self, family):
        return stranger4(self.rng) if family == 4 else stranger6(self.rng)

    def isn(self):
        return self.rng.randrange(0, 1 << 32)

    def sport(self):
        return self.rng.randrange(20000, 60000)

    # a live flow's own packet as its client would send it (spoofed)
    def live(self, f, flags, seq, ack=None):
        S = self.S
        return self.ip(f["family"], self.client(f["family"]), self.vip(f["family"])) / S.TCP(
            sport=f["sport"], dport=80, flags=flags, seq=seq % (1 << 32),
            ack=(ack if ack is not None else self.isn()), window=502)

    # an encapsulated packet from `src` (a backend) to the router: a bounce
    def bounce(self, family, src, inner, gue, mark):
        S = self.S
        router = self.ctx["router4"] if family == 4 else self.ctx["router6"]
        if gue:
            outer = self.ip(family, src, router, id=mark) / S.UDP(
                sport=0xC000 | self.rng.randrange(0, 0x4000), dport=self.ctx["gue_port"], chksum=0)
        else:
            inner_v6 = isinstance(inner, S.IPv6)
            outer = self.ip(family, src, router, id=mark, proto=41 if inner_v6 else 4)
        if family == 4:
            outer[S.IP].flags = "DF"
        return outer / inner


def mark_of(family):
    return NOT_A_TAG_ID if family == 4 else NOT_A_TAG_LABEL


def backends_of(ctx, family):
    return ctx["backends4"] if family == 4 else ctx["backends6"]


def cls_live_spoof(b, ctx, a):
    """Blind SYN / RST / FIN on each live flow: out of the router's sequence
    window (RST, FIN) or a SYN on an active flow: forwarded to the flow's
    backend, the flow unchanged (guarded)."""
    for f in ctx["flows"]:
        for _ in range(a.per_flow):
            b.add("syn", b.live(f, "S", b.isn(), 0))
            far = f["seq_next"] + (1 << 31) + b.rng.randrange(0, 1 << 20)
            b.add("rst_out_of_window", b.live(f, "R", far, 0))
            b.add("fin_out_of_window", b.live(f, "FA", far))


def cls_live_syn_targeted(b, ctx, a):
    """SYNs with new ISNs on the IPv4 live flows of one backend (the one
    holding most of them), in --phases bursts: each is guarded (forwarded to
    that backend, the flow kept), and each counts as a new flow there whose
    handshake never completes."""
    flows = [f for f in ctx["flows"] if f["family"] == 4]
    by = {}
    for f in flows:
        by.setdefault(f["backend"], []).append(f)
    target = max(sorted(by), key=lambda k: len(by[k]))
    phases = []
    for _ in range(a.phases):
        start = len(b.frames)
        for f in by[target]:
            for _ in range(a.per_flow):
                b.add("syn", b.live(f, "S", b.isn(), 0))
        phases.append((start, len(b.frames)))
    return phases


def cls_live_inwindow(b, ctx, a):
    """One RST (half the flows) or FIN (the other half) within the router's
    window of the flow's seq_next (100,000 bytes behind: old data for the
    backend's TCP, which drops it or answers a duplicate ACK), then a SYN on
    the same tuple: the guessed RST/FIN-then-SYN that moved flows before."""
    for i, f in enumerate(ctx["flows"]):
        back = f["seq_next"] - 100000
        if i % 2 == 0:
            b.add("rst_in_window", b.live(f, "R", back, 0))
        else:
            b.add("fin_in_window", b.live(f, "FA", back))
    for f in ctx["flows"]:
        b.add("syn_after", b.live(f, "S", b.isn(), 0))


def cls_ack_flood(b, ctx, a):
    """ACKs of random tuples (adopted mid-stream, on probation)."""
    S = b.S
    for i in range(a.count):
        fam = 4 if i % 4 else 6
        b.add("ack%d" % fam, b.ip(fam, b.stranger(fam), b.vip(fam)) / S.TCP(
            sport=b.sport(), dport=80, flags="A", seq=b.isn(), ack=b.isn(), window=502))


def cls_udp_flood(b, ctx, a):
    """UDP of random tuples to the UDP VIP (flows_udp), and to ports and
    protocols of the VIP addresses that no VIP serves."""
    S = b.S
    for _ in range(a.count):
        b.add("udp_vip", S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) /
              S.UDP(sport=b.sport(), dport=ctx["udp_port"]) / (b"x" * 32))
    for i in range(a.count // 4):
        b.add("udp_unserved4", S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) /
              S.UDP(sport=b.sport(), dport=7) / b"x")
        b.add("syn_unserved6", S.IPv6(src=stranger6(b.rng), dst=ctx["vip6"]) /
              S.TCP(sport=b.sport(), dport=1, flags="S", seq=b.isn()))
        if i % 4 == 0:
            b.add("gre_unserved4", S.IP(src=stranger4(b.rng), dst=ctx["vip4"], proto=47) / (b"\0" * 8))
            b.add("sctp_unserved6", S.IPv6(src=stranger6(b.rng), dst=ctx["vip6"], nh=132) / (b"\0" * 12))


def cls_pairs(b, ctx, a):
    """A blind spoofer completing handshakes: SYN, then at once the ACK with
    ISN + 1 (the router's handshake completes; the flow starts on
    probation), then the flow's first packet after it (the probe), then,
    after the probation's wait, one more (the promotion if nothing bounced
    the probe). Three phases, sent --phase-gap apart."""
    S = b.S
    tuples = []
    for i in range(a.count):
        fam = 4 if i % 4 else 6
        tuples.append((fam, b.stranger(fam), b.sport(), b.isn()))

    def pkt(kind, fam, src, sport, isn):
        flags, seq = ("S", isn) if kind == "syn" else ("A", isn + 1)
        return b.ip(fam, src, b.vip(fam)) / S.TCP(sport=sport, dport=80, flags=flags, seq=seq % (1 << 32),
                                                  ack=0 if kind == "syn" else b.isn(), window=502)
    phases = []
    for kinds in (("syn", "ack"), ("probe",), ("after_wait",)):
        start = len(b.frames)
        for t in tuples:
            for kind in kinds:
                b.add("%s%d" % (kind, t[0]), pkt(kind, *t))
        phases.append((start, len(b.frames)))
    return phases


def cls_forged_bounce(b, ctx, a):
    """Bounces forged from the backends' addresses, without the router's tag:
    (1) a SYN spoofed on each live flow, then that SYN encapsulated from each
        backend of its family (IP-in-IP / GUE for IPv4; GUE / IPv6-in-IPv6
        for IPv6), then once more from the flow's backend in the other
        encapsulation;
    (2) SYNs of new tuples, each then bounced from every backend;
    (3) mid-stream: spoofed handshakes (SYN, ACK ISN + 1: on probation),
        then their next packet bounced from every backend; and a packet of
        each live flow bounced from its backend;
    (4) encapsulated to the router but not a bounce at all (UDP inside, a
        SYN+ACK inside)."""
    S = b.S
    # (1) the SYNs on the live flows, then their forged bounces
    syns = [(f, b.live(f, "S", b.isn(), 0)) for f in ctx["flows"]]
    for f, syn in syns:
        b.add("live_syn", syn)
    for f, syn in syns:
        fam = f["family"]
        for be in backends_of(ctx, fam):
            b.add("live_syn_bounce", b.bounce(fam, be, syn.copy(), gue=(fam == 6), mark=mark_of(fam)))
        b.add("live_syn_bounce_again", b.bounce(fam, f["backend_addr"], syn.copy(), gue=(fam == 4),
                                                mark=mark_of(fam)))
    # (3b) a packet of each live flow, bounced from its own backend
    for f in ctx["flows"]:
        fam = f["family"]
        pkt = b.live(f, "PA", f["seq_next"]) / b"GET / HTTP/1.1\r\n\r\n"
        b.add("live_data_bounce", b.bounce(fam, f["backend_addr"], pkt, gue=(fam == 6), mark=mark_of(fam)))
    # (2) new tuples: SYN, then bounces
    fresh = []
    for i in range(a.count):
        fam = 4 if i % 4 else 6
        syn = b.ip(fam, b.stranger(fam), b.vip(fam)) / S.TCP(
            sport=b.sport(), dport=80, flags="S", seq=b.isn(), window=502)
        fresh.append((fam, syn))
        b.add("new_syn", syn)
    # (3a) spoofed handshakes for the mid-stream bounces
    hs = []
    for i in range(a.count // 2):
        fam = 4 if i % 4 else 6
        src, sport, isn = b.stranger(fam), b.sport(), b.isn()
        hs.append((fam, src, sport, isn))
        b.add("pair_syn", b.ip(fam, src, b.vip(fam)) / S.TCP(sport=sport, dport=80, flags="S", seq=isn))
    for fam, src, sport, isn in hs:
        b.add("pair_ack", b.ip(fam, src, b.vip(fam)) / S.TCP(
            sport=sport, dport=80, flags="A", seq=(isn + 1) % (1 << 32), ack=b.isn()))
    for fam, syn in fresh:
        for be in backends_of(ctx, fam):
            b.add("new_syn_bounce", b.bounce(fam, be, syn.copy(), gue=bool(b.rng.randrange(2)),
                                             mark=mark_of(fam)))
    for fam, src, sport, isn in hs:
        pkt = b.ip(fam, src, b.vip(fam)) / S.TCP(sport=sport, dport=80, flags="PA",
                                                 seq=(isn + 1) % (1 << 32), ack=b.isn()) / b"GET /"
        for be in backends_of(ctx, fam):
            b.add("midstream_bounce", b.bounce(fam, be, pkt.copy(), gue=bool(b.rng.randrange(2)),
                                               mark=mark_of(fam)))
    # (4) not a bounce
    for i in range(a.count // 4):
        fam = 4 if i % 2 else 6
        be = backends_of(ctx, fam)[i % 3]
        if i % 4 < 2:
            inner = b.ip(fam, b.stranger(fam), b.vip(fam)) / S.UDP(sport=b.sport(), dport=ctx["udp_port"])
        else:
            inner = b.ip(fam, b.stranger(fam), b.vip(fam)) / S.TCP(sport=b.sport(), dport=80, flags="SA")
        b.add("not_a_bounce", b.bounce(fam, be, inner, gue=False, mark=mark_of(fam)))


def cls_decap_stranger(b, ctx, a):
    """Encapsulated packets to a backend's own address from an outer source
    that is no router (sent from the client, routed by the router)."""
    S = b.S
    for i in range(a.count):
        be4, be6 = ctx["backends4"][i % 3], ctx["backends6"][i % 3]
        inner4 = S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) / S.TCP(sport=b.sport(), dport=80, flags="S")
        inner6 = S.IPv6(src=stranger6(b.rng), dst=ctx["vip6"]) / S.TCP(sport=b.sport(), dport=80, flags="S")
        kind = i % 3
        if kind == 0:
            b.add("ipip", S.IP(src=ctx["client4"], dst=be4, proto=4) / inner4)
        elif kind == 1:
            b.add("gue", S.IP(src=ctx["client4"], dst=be4) /
                  S.UDP(sport=b.sport(), dport=ctx["gue_port"], chksum=0) / inner4)
        else:
            b.add("ip6ip6", S.IPv6(src=ctx["client6"], dst=be6, nh=41) / inner6)


def cls_decap_router_spoof(b, ctx, a):
    """Encapsulated packets to backend a.backend's own address with a
    router's outer source (so sent on the backend's link): outer fragments,
    an inner destination that is no VIP, and a VIP address on a port or
    protocol that no VIP serves."""
    S = b.S
    i_be = b.backend - 1
    be4, be6 = ctx["backends4"][i_be], ctx["backends6"][i_be]
    r4, r6 = ctx["router4"], ctx["router6"]
    for i in range(a.count):
        inner4 = S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) / S.TCP(sport=b.sport(), dport=80, flags="S")
        inner6 = S.IPv6(src=stranger6(b.rng), dst=ctx["vip6"]) / S.TCP(sport=b.sport(), dport=80, flags="S")
        k = i % 8
        if k == 0:  # first fragment of IP-in-IP
            b.add("frag", S.IP(src=r4, dst=be4, proto=4, flags="MF") / inner4)
        elif k == 1:  # a later fragment of IP-in-IP
            b.add("frag", S.IP(src=r4, dst=be4, proto=4, frag=8) / bytes(inner4)[:24])
        elif k == 2:  # first fragment of GUE
            b.add("frag", S.IP(src=r4, dst=be4, flags="MF") /
                  S.UDP(sport=b.sport(), dport=ctx["gue_port"], chksum=0) / inner4)
        elif k == 3:  # IPv6 outer with a fragment header, IPv6 inside
            b.add("frag", S.IPv6(src=r6, dst=be6) / S.IPv6ExtHdrFragment(nh=41, m=1, id=b.isn()) / inner6)
        elif k == 4:  # inner destination: the backend itself (its ssh), not a VIP
            b.add("not_vip", S.IP(src=r4, dst=be4, proto=4) /
                  S.IP(src=stranger4(b.rng), dst=be4) / S.TCP(sport=b.sport(), dport=22, flags="S"))
        elif k == 5:
            b.add("not_vip", S.IPv6(src=r6, dst=be6, nh=41) /
                  S.IPv6(src=stranger6(b.rng), dst=be6) / S.TCP(sport=b.sport(), dport=22, flags="S"))
        elif k == 6:  # a VIP address, a protocol/port no VIP serves (UDP 7)
            b.add("vip_unserved", S.IP(src=r4, dst=be4, proto=4) /
                  S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) / S.UDP(sport=b.sport(), dport=7) / b"x")
        else:  # the IPv6 VIP's address, TCP 22 (it serves 80)
            b.add("vip_unserved", S.IPv6(src=r6, dst=be6) / S.UDP(
                sport=b.sport(), dport=ctx["gue_port"], chksum=0) /
                S.IPv6(src=stranger6(b.rng), dst=ctx["vip6"]) / S.TCP(sport=b.sport(), dport=22, flags="S"))


def ip4_raw(S, src, dst, proto, payload, ihl=5, tot_len=None, version=4):
    hdr = bytes(S.IP(src=src, dst=dst, proto=proto, ihl=5, len=20 + len(payload)))
    b = bytearray(hdr)
    b[0] = (version << 4) | ihl
    tl = tot_len if tot_len is not None else 20 + len(payload)
    b[2:4] = tl.to_bytes(2, "big")
    b[10:12] = b"\0\0"
    b[10:12] = S.checksum(bytes(b)).to_bytes(2, "big")
    return bytes(b) + payload


def cls_malformed(b, ctx, a):
    """Malformed headers to the VIPs (docs/dataplane.md, "Policy for unusual
    packets"): each sub-class named after the verdict that counts it."""
    S = b.S
    v4, v6 = ctx["vip4"], ctx["vip6"]
    for i in range(a.count):
        s4, s6 = stranger4(b.rng), stranger6(b.rng)
        tcp = bytes(S.TCP(sport=b.sport(), dport=80, flags="A", seq=b.isn()))
        k = i % 16
        if k == 0:  # IHL 4
            b.add("bad_ip4", None, raw=ip4_raw(S, s4, v4, 6, tcp, ihl=4))
        elif k == 1:  # total length past the frame
            b.add("bad_ip4", None, raw=ip4_raw(S, s4, v4, 6, tcp, tot_len=400))
        elif k == 2:  # total length shorter than the header
            b.add("bad_ip4", None, raw=ip4_raw(S, s4, v4, 6, tcp, tot_len=12))
        elif k == 3:  # IPv4 ethertype, version 5
            b.add("bad_ip4", None, raw=ip4_raw(S, s4, v4, 6, tcp, version=5))
        elif k == 4:  # 2 bytes of TCP
            b.add("drop_bad_l4", None, raw=ip4_raw(S, s4, v4, 6, tcp[:2]))
        elif k == 5:  # 12 bytes of TCP: ports, no data offset
            b.add("drop_bad_l4", None, raw=ip4_raw(S, s4, v4, 6, tcp[:12]))
        elif k == 6:  # data offset 2 (8 bytes)
            t = bytearray(tcp)
            t[12] = 0x20
            b.add("drop_bad_l4", None, raw=ip4_raw(S, s4, v4, 6, bytes(t)))
        elif k == 7:  # data offset 15 (60 bytes) in a 20-byte header
            t = bytearray(tcp)
            t[12] = 0xF0
            b.add("drop_bad_l4", None, raw=ip4_raw(S, s4, v4, 6, bytes(t)))
        elif k == 8:  # UDP length past the packet, to the UDP VIP
            u = bytearray(bytes(S.UDP(sport=b.sport(), dport=ctx["udp_port"]) / b"abcd"))
            u[4:6] = (200).to_bytes(2, "big")
            b.add("drop_bad_l4", None, raw=ip4_raw(S, s4, v4, 17, bytes(u)))
        elif k == 9:  # IPv4 fragments to the VIP
            b.add("drop_frag4", S.IP(src=s4, dst=v4, flags="MF") / S.TCP(sport=b.sport(), dport=80, flags="S"))
        elif k == 10:
            b.add("drop_frag4", S.IP(src=s4, dst=v4, frag=100, proto=6) / (b"\0" * 24))
        elif k == 11:  # five destination-options headers
            ext = S.IPv6ExtHdrDestOpt() / S.IPv6ExtHdrDestOpt() / S.IPv6ExtHdrDestOpt() / \
                S.IPv6ExtHdrDestOpt() / S.IPv6ExtHdrDestOpt()
            b.add("ip6_ext", S.IPv6(src=s6, dst=v6) / ext / S.TCP(sport=b.sport(), dport=80, flags="S"))
        elif k == 12:  # hop-by-hop, then AH / ESP / no next header
            nh = (51, 50, 59)[i % 3]
            b.add("ip6_ext", S.IPv6(src=s6, dst=v6) / S.IPv6ExtHdrHopByHop(nh=nh) / (b"\0" * 16))
        elif k == 13:  # routing header, then an unknown extension (253)
            b.add("ip6_ext", S.IPv6(src=s6, dst=v6) / S.IPv6ExtHdrRouting(nh=253, addresses=[]) / (b"\0" * 16))
        elif k == 14:  # a hop-by-hop header longer than the payload, then TCP
            raw = bytearray(bytes(S.IPv6(src=s6, dst=v6, nh=0, plen=8 + 20) /
                                  S.IPv6ExtHdrHopByHop(nh=6) / tcp))
            raw[40 + 1] = 6  # header extension length: 56 bytes, past the payload
            b.add("bad_ip6", None, raw=bytes(raw) + b"\0" * 64)
        else:  # an IPv6 fragment to the VIP
            b.add("drop_frag6", S.IPv6(src=s6, dst=v6) / S.IPv6ExtHdrFragment(nh=6, m=1, id=b.isn()) /
                  S.TCP(sport=b.sport(), dport=80, flags="S"))


def cls_icmp(b, ctx, a):
    """ICMP errors to the VIPs quoting other clients' flows (the backend's
    reply VIP -> client, with a sequence number the spoofer guessed), quoting
    unknown tuples and unserved ports; and echo requests."""
    S = b.S
    for f in ctx["flows"]:
        fam = f["family"]
        quote_ip = b.ip(fam, b.vip(fam), b.client(fam)) / S.TCP(
            sport=80, dport=f["sport"], flags="A", seq=b.isn(), ack=f["seq_next"])
        for j in range(a.per_flow):
            if fam == 4:
                if j % 2 == 0:
                    err = S.ICMP(type=3, code=4, nexthopmtu=68)
                    b.add("frag_needed_live", S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) / err / quote_ip.copy())
                else:
                    b.add("port_unreach_live", S.IP(src=ctx["client4"], dst=ctx["vip4"]) /
                          S.ICMP(type=3, code=3) / quote_ip.copy())
            else:
                if j % 2 == 0:
                    b.add("too_big_live", S.IPv6(src=stranger6(b.rng), dst=ctx["vip6"]) /
                          S.ICMPv6PacketTooBig(mtu=1280) / quote_ip.copy())
                else:
                    b.add("port_unreach_live", S.IPv6(src=ctx["client6"], dst=ctx["vip6"]) /
                          S.ICMPv6DestUnreach(code=4) / quote_ip.copy())
    for i in range(a.count):
        fam = 4 if i % 2 else 6
        quote = b.ip(fam, b.vip(fam), b.stranger(fam)) / S.TCP(sport=80, dport=b.sport(), seq=b.isn())
        if fam == 4:
            b.add("frag_needed_unknown", S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) /
                  S.ICMP(type=3, code=4, nexthopmtu=576) / quote)
        else:
            b.add("too_big_unknown", S.IPv6(src=stranger6(b.rng), dst=ctx["vip6"]) /
                  S.ICMPv6PacketTooBig(mtu=1280) / quote)
    for i in range(a.count // 2):
        b.add("unmatched", S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) / S.ICMP(type=3, code=3) /
              S.IP(src=ctx["vip4"], dst=stranger4(b.rng)) / S.UDP(sport=7, dport=b.sport()))
        if i % 2:
            b.add("echo", S.IP(src=stranger4(b.rng), dst=ctx["vip4"]) / S.ICMP(type=8))
        else:
            b.add("echo", S.IPv6(src=stranger6(b.rng), dst=ctx["vip6"]) / S.ICMPv6EchoRequest())


CLASSES = {
    "live_spoof": cls_live_spoof,
    "live_syn_targeted": cls_live_syn_targeted,
    "live_inwindow": cls_live_inwindow,
    "ack_flood": cls_ack_flood,
    "udp_flood": cls_udp_flood,
    "pairs": cls_pairs,
    "forged_bounce": cls_forged_bounce,
    "decap_stranger": cls_decap_stranger,
    "decap_router_spoof": cls_decap_router_spoof,
    "malformed": cls_malformed,
    "icmp": cls_icmp,
}


# Packets per class: (function, its parameters). decap_router_spoof is
# built once per backend (sent on that backend's link).
PLAN = {
    "live_spoof": {"per_flow": 10},
    "live_syn_targeted": {"per_flow": 4, "phases": 10},
    "live_inwindow": {},
    "ack_flood": {"count": 2000},
    "udp_flood": {"count": 2000},
    "malformed": {"count": 1600},
    "icmp": {"count": 400, "per_flow": 10},
    "decap_stranger": {"count": 600},
    "decap_router_spoof": {"count": 400},
    "forged_bounce": {"count": 200},
    "pairs": {"count": 400},
}


def build(ctx, a):
    """Builds every class once (scapy is slow to start and to build):
    DIR/NAME.bin (the L3 packets, each behind a 2-byte length) and
    DIR/NAME.json (sub-class counts and the phases to send apart)."""
    S = scapy()
    names = []
    for cls, params in PLAN.items():
        backends = (1, 2, 3) if cls == "decap_router_spoof" else (1,)
        for be in backends:
            name = cls if len(backends) == 1 else "%s%d" % (cls, be)
            # one stream per class: two classes never draw the same tuples
            b = Builder(S, ctx, random.Random("%d/%s" % (a.seed, name)), be)
            phases = CLASSES[cls](b, ctx, argparse.Namespace(**params)) or [(0, len(b.frames))]
            if len(b.frames) > 20000:
                sys.exit("attack_send: class %s built %d packets (bound 20000)" % (name, len(b.frames)))
            with open("%s/%s.bin" % (a.dir, name), "wb") as f:
                for fr in b.frames:
                    f.write(len(fr).to_bytes(2, "big") + fr)
            with open("%s/%s.json" % (a.dir, name), "w") as f:
                json.dump({"class": cls, "sent": b.sent, "phases": phases}, f)
            names.append("%s:%d" % (name, len(b.frames)))
    print(" ".join(names))


def tx_dropped(iface):
    with open("/sys/class/net/%s/statistics/tx_dropped" % iface) as f:
        return int(f.read())


def replay(ctx, a):
    """Sends DIR/NAME behind Ethernet headers from --iface to --dst-mac, in
    batches of --batch every --gap s, its phases --phase-gap s apart; prints
    the sub-class counts, the frames and what the sending device dropped."""
    with open("%s/%s.json" % (a.dir, a.name)) as f:
        meta = json.load(f)
    frames = []
    with open("%s/%s.bin" % (a.dir, a.name), "rb") as f:
        data = f.read()
    with open("/sys/class/net/%s/address" % a.iface) as f:
        src_mac = bytes.fromhex(f.read().strip().replace(":", ""))
    eth = bytes.fromhex(a.dst_mac.replace(":", "")) + src_mac
    i = 0
    while i < len(data):
        n = int.from_bytes(data[i:i + 2], "big")
        pkt = data[i + 2:i + 2 + n]
        frames.append(eth + (b"\x86\xdd" if pkt[0] >> 4 == 6 else b"\x08\x00") + pkt)
        i += 2 + n
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((a.iface, 0))
    drop0 = tx_dropped(a.iface)
    t0 = time.time()
    for n, (lo, hi) in enumerate(meta["phases"]):
        if n:
            time.sleep(a.phase_gap)
        for j in range(lo, hi, a.batch):
            for fr in frames[j:min(j + a.batch, hi)]:
                sock.send(fr)
            time.sleep(a.gap)
    took = time.time() - t0
    sock.close()
    print(json.dumps({"class": meta["class"], "sent": meta["sent"], "frames": len(frames),
                      "tx_dropped": tx_dropped(a.iface) - drop0, "seconds": round(took, 3)},
                     sort_keys=True))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hold")
    h.add_argument("ctx")
    h.add_argument("--seconds", type=float, required=True)
    h.add_argument("--period", type=float, default=0.4)
    h.add_argument("--timeout", type=float, default=2.0)
    h.add_argument("--conns4", type=int, default=16)
    h.add_argument("--conns6", type=int, default=16)
    h.add_argument("--out", required=True)
    h.add_argument("--ready", required=True)
    h.add_argument("--pidfile", help="this process's PID, for the test's SIGTERM")
    b = sub.add_parser("build")
    b.add_argument("ctx")
    b.add_argument("--dir", required=True)
    b.add_argument("--seed", type=int, default=41)
    r = sub.add_parser("replay")
    r.add_argument("ctx")
    r.add_argument("--dir", required=True)
    r.add_argument("--name", required=True, help="a class built by `build` (decap_router_spoof: + backend)")
    r.add_argument("--iface", required=True)
    r.add_argument("--dst-mac", required=True)
    r.add_argument("--batch", type=int, default=32)
    r.add_argument("--gap", type=float, default=0.002, help="seconds between batches")
    r.add_argument("--phase-gap", type=float, default=0.15,
                   help="seconds between a class's phases (pairs: more than the 100 ms probation)")
    st = sub.add_parser("storm")
    st.add_argument("ctx")
    st.add_argument("--count", type=int, required=True)
    st.add_argument("--rate", type=float, required=True)
    st.add_argument("--port", type=int, default=1)
    st.add_argument("--timeout", type=float, default=3.0)
    c = sub.add_parser("context")
    c.add_argument("ctx")
    c.add_argument("--ready", required=True)
    c.add_argument("--dump", required=True, help="bpftool -j map dump of `flows`")
    sp = sub.add_parser("spoofed-in")
    sp.add_argument("ctx")
    sp.add_argument("--dump", required=True, help="bpftool -j map dump of a flow map")
    a = ap.parse_args()
    with open(a.ctx) as f:
        ctx = json.load(f)
    lab_only(ctx["vip4"], ctx["vip6"], ctx["client4"], ctx["client6"], ctx["router4"], ctx["router6"],
             *ctx["backends4"], *ctx["backends6"])
    for n in ("count", "seconds"):
        v = getattr(a, n, None)
        if v is not None and not 0 < v <= 5000:
            sys.exit("attack_send: --%s must be in (0, 5000]" % n.replace("_", "-"))
    {"hold": hold, "build": build, "replay": replay, "storm": storm, "context": context,
     "spoofed-in": spoofed_in}[a.cmd](ctx, a)


if __name__ == "__main__":
    main()
