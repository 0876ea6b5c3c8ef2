#!/bin/bash
# e2e: draining a backend through lbctl, under load.
# Part 1 (graceful): wrk keep-alive load; backend-1 is drained with a
#   deadline longer than the load. Expected: zero wrk errors; the drained
#   backend keeps serving its existing connections until they end; fresh
#   connections avoid it; status shows it draining with effective weight 0
#   and its flows, which drop to 0 once the connections are closed.
# Part 2 (deadline): long-lived keep-alive sessions (one request every
#   100 ms each), backend-1 drained with a 3 s deadline. Expected: the
#   sessions on backend-1 are answered by it until the deadline and are
#   re-steered after it (the next request reaches another backend, which
#   resets the unknown connection); sessions on other backends see no error;
#   the agent marks the backend evicted; resteered_away counts the moves.
source "$(dirname "$0")/agent_lib.sh"

agent_lab_up 30
agent_start
VIPK="$VIP4:$VIP_PORT/tcp"

# ---- part 1 --------------------------------------------------------------
log "part 1: wrk 8 s, 24 keep-alive connections; drain backend-1 (deadline 60 s) after 2 s"
rst_capture_start
ns_bg WRK client wrk -t 2 -c 24 -d 8s --timeout 2s "http://$VIP4:$VIP_PORT/" >"$AGENT_DIR/wrk.out" 2>&1
sleep 2
be1_before=$(lines "$BE1_LOG")
t_drain=$(date +%s.%N)
lbctl backend drain "$VIPK" "$BE1_ADDR4" --deadline 60s
check "status: backend-1 draining" test "$(backend_field "$VIPK" "$BE1_ADDR4" state)" = draining
check "status: backend-1 effective weight 0" test "$(backend_field "$VIPK" "$BE1_ADDR4" effectiveWeight)" = 0
check "status: backend-1 holds no table slots" test "$(backend_field "$VIPK" "$BE1_ADDR4" tableSlots)" = 0
flows_during=$(backend_field "$VIPK" "$BE1_ADDR4" flows)
check "status: backend-1 still has flows while draining (got $flows_during)" test "$flows_during" -gt 0
out=$(curl_fresh 4 60)
on_be1=$(grep -cx 'backend-1' <<<"$out" || true)
answered=$(grep -c '^backend-' <<<"$out" || true)
check "fresh connections during the drain: 60 answered (got $answered), none on backend-1 (got $on_be1)" \
  test "$answered" -eq 60 -a "$on_be1" -eq 0
sleep 1
be1_mid=$(lines "$BE1_LOG")
check "backend-1 keeps serving its existing connections while draining ($be1_before -> $be1_mid)" \
  test "$be1_mid" -gt "$be1_before"
wait "$WRK" || true
sed 's/^/  wrk: /' "$AGENT_DIR/wrk.out"
check "wrk reports no socket errors" bash -c "! grep -q 'Socket errors' '$AGENT_DIR/wrk.out'"
check "wrk reports no non-2xx answers" bash -c "! grep -q 'Non-2xx' '$AGENT_DIR/wrk.out'"
rsts=$(rst_capture_stop)
check "no TCP reset from the VIP reached the client (captured $rsts)" test "$rsts" -eq 0
# Connections on backend-1 accepted after the drain would be new flows on it.
late=$(awk -v t="$t_drain" '$1 > t + 0.5 && $5 == 1' "$BE1_LOG" | wc -l)
check "no new connection reached backend-1 after the drain (got $late)" test "$late" -eq 0
n=0
while (($(backend_field "$VIPK" "$BE1_ADDR4" flows) > 0 && n < 60)); do
  sleep 0.2
  n=$((n + 1))
done
check "backend-1's flows finished once wrk closed its connections" \
  test "$(backend_field "$VIPK" "$BE1_ADDR4" flows)" = 0
lbctl backend undrain "$VIPK" "$BE1_ADDR4"
check "undrain: backend-1 active again" test "$(backend_field "$VIPK" "$BE1_ADDR4" state)" = active

# ---- part 2 --------------------------------------------------------------
log "part 2: 24 long-lived sessions; drain backend-1 with a 3 s deadline"
steered0=$(backend_field "$VIPK" "$BE1_ADDR4" counters.resteeredAway)
rst_capture_start
cat >"$AGENT_DIR/sessions.py" <<'PY'
import json, socket, sys, threading, time
host, port, n, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
t0 = time.time()
results = []
lock = threading.Lock()

def session(i):
    rec = {"session": i, "answers": [], "error": None, "error_t": None}
    try:
        # From ports above the ephemeral range (32768-60999) that part 1's
        # wrk used: a backend holding one of its TIME_WAITs would answer a
        # re-steered session with an ACK of the old connection, not a RST.
        s = socket.create_connection((host, port), timeout=2,
                                     source_address=("", 62000 + i))
        s.settimeout(2)
        f = s.makefile("rb")
        while time.time() - t0 < duration:
            s.sendall(b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n")
            status = f.readline()
            if not status:
                raise ConnectionError("closed by peer")
            length = 0
            while True:
                line = f.readline()
                if line in (b"\r\n", b""):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = f.read(length).decode().strip()
            rec["answers"].append([round(time.time() - t0, 3), body])
            time.sleep(0.1)
        s.close()
    except Exception as e:  # the test judges which errors were expected
        rec["error"] = type(e).__name__ + ": " + str(e)
        rec["error_t"] = round(time.time() - t0, 3)
    with lock:
        results.append(rec)

threads = [threading.Thread(target=session, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
    time.sleep(0.02)
for t in threads:
    t.join()
print(json.dumps({"t0": t0, "sessions": sorted(results, key=lambda r: r["session"])}))
PY
ns_bg SESS client python3 "$AGENT_DIR/sessions.py" "$VIP4" "$VIP_PORT" 24 14 \
  >"$AGENT_DIR/sessions.json" 2>"$AGENT_DIR/sessions.err"
sleep 3
t_drain2=$(date +%s.%N)
lbctl backend drain "$VIPK" "$BE1_ADDR4" --deadline 3s
n=0
until [[ $(backend_field "$VIPK" "$BE1_ADDR4" state) == evicted ]] || ((n > 50)); do
  sleep 0.2
  n=$((n + 1))
done
check "the agent marked backend-1 evicted after the deadline" \
  test "$(backend_field "$VIPK" "$BE1_ADDR4" state)" = evicted
wait "$SESS" || true
python3 - "$AGENT_DIR/sessions.json" "$t_drain2" 3 <<'PY' >"$AGENT_DIR/sessions.verdict" || fail "long-lived sessions: $(cat "$AGENT_DIR/sessions.verdict")"
import json, sys
d = json.load(open(sys.argv[1]))
drain = float(sys.argv[2]) - d["t0"]
deadline = drain + float(sys.argv[3])
problems, on_be1, others = [], 0, 0
for s in d["sessions"]:
    if not s["answers"]:
        problems.append("session %d got no answer at all (%s)" % (s["session"], s["error"]))
        continue
    first = s["answers"][0][1]
    names = {b for _, b in s["answers"]}
    if names != {first}:
        problems.append("session %d changed backend without an error: %s" % (s["session"], names))
    if first == "backend-1":
        on_be1 += 1
        before = [t for t, _ in s["answers"] if t > drain + 0.2 and t < deadline - 0.2]
        if not before:
            problems.append("session %d on backend-1 was not served between drain and deadline" % s["session"])
        if s["error"] is None:
            problems.append("session %d on backend-1 survived the deadline" % s["session"])
        elif s["error_t"] < deadline - 0.2:
            problems.append("session %d on backend-1 failed before the deadline (t=%.2f, deadline %.2f): %s"
                            % (s["session"], s["error_t"], deadline, s["error"]))
    else:
        others += 1
        if s["error"] is not None:
            problems.append("session %d on %s failed: %s" % (s["session"], first, s["error"]))
print("%d sessions on backend-1 (all re-steered after the deadline), %d on others (no errors)%s"
      % (on_be1, others, "" if not problems else "; PROBLEMS: " + "; ".join(problems)))
sys.exit(1 if problems or on_be1 == 0 or others == 0 else 0)
PY
log "sessions: $(cat "$AGENT_DIR/sessions.verdict")"
rsts=$(rst_capture_stop)
on_be1=$(awk '{print $1}' "$AGENT_DIR/sessions.verdict")
check "the capture saw the resets of the re-steered sessions ($rsts RSTs for $on_be1 sessions)" \
  test "$rsts" -ge "$on_be1" -a "$rsts" -gt 0
steered1=$(backend_field "$VIPK" "$BE1_ADDR4" counters.resteeredAway)
check "resteered_away of backend-1 counted the moves ($steered0 -> $steered1)" test "$steered1" -gt "$steered0"
check "audit log shows the operator's drain and the automation's eviction" \
  sh -c "'$LBCTL' --socket '$SOCK' --json audit | grep -q '\"action\": *\"evict\"'"

((FAILED == 0)) && log "PASS"
