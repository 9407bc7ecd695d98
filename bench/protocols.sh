#!/usr/bin/env bash
# bench/protocols.sh runs forgeload load beside Crankfire and k6 against one
# loopback server (bench/prototarget) and prints, per protocol, WebSocket
# messages/s, SSE events/s and gRPC calls/s, latency percentiles and each
# peer's ratio to forgeload. See docs/benchmarks.md ("WebSocket, SSE and gRPC").
#
#   bench/protocols.sh [ws|sse|grpc|all]   (default all)
#
# Environment (all optional):
#   CRANKFIRE_BIN   path of a crankfire binary; without it Crankfire's rows are skipped
#   K6_BIN          path of a k6 binary; without it k6's rows are skipped
#   BENCH_OUT       directory for raw outputs (default: a new /tmp/forgeload-proto.XXXXXX)
#   BENCH_DURATION  seconds per run (default 10)
#   BENCH_CONNS     concurrent workers / virtual users (default 16)
#   BENCH_WS_MESSAGES  messages per WebSocket session (default 10)
#   BENCH_SSE_EVENTS   events per SSE session (default 100)
#
# Every generator gets the same settings: a closed loop of BENCH_CONNS
# workers for BENCH_DURATION seconds, no rate limit. Every run is bounded by
# its duration plus a timeout, and all traffic goes to the server this script
# starts on 127.0.0.1.
set -euo pipefail

PROTOS=${1:-all}
case $PROTOS in
ws | sse | grpc) ;;
all) PROTOS="ws sse grpc" ;;
*)
	echo "usage: $0 [ws|sse|grpc|all]" >&2
	exit 2
	;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${BENCH_OUT:-$(mktemp -d /tmp/forgeload-proto.XXXXXX)}
DUR=${BENCH_DURATION:-10}
CONNS=${BENCH_CONNS:-16}
MSGS=${BENCH_WS_MESSAGES:-10}
EVENTS=${BENCH_SSE_EVENTS:-100}
mkdir -p "$OUT/raw"
RESULTS=$OUT/results.md

log() { echo "bench: $*" >&2; }
emit() { echo "$*" | tee -a "$RESULTS"; }
command -v jq >/dev/null && command -v curl >/dev/null || {
	echo "bench: jq and curl are required (apt-get install jq curl)" >&2
	exit 1
}

PEERS=()
peer() { # peer NAME PATH
	if [ -n "$2" ] && [ -x "$2" ]; then
		PEERS+=("$1")
	else
		log "skipping $1: set ${1^^}_BIN to the path of a $1 binary to include it"
	fi
}
peer crankfire "${CRANKFIRE_BIN:-}"
peer k6 "${K6_BIN:-}"

(cd "$ROOT" && go build -o "$OUT/prototarget" ./bench/prototarget && go build -tags grpcnotrace -o "$OUT/forgeload" ./cmd/runner)

"$OUT/prototarget" -proto "$OUT/greeter.proto" >"$OUT/raw/target.out" 2>&1 &
TARGET_PID=$!
trap 'kill "$TARGET_PID" 2>/dev/null || true; wait "$TARGET_PID" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	grep -q '^http=' "$OUT/raw/target.out" && break
	sleep 0.1
done
read -r HTTP_ADDR GRPC_ADDR < <(sed -n 's/^http=\([^ ]*\) grpc=\(.*\)$/\1 \2/p' "$OUT/raw/target.out")
[ -n "${GRPC_ADDR:-}" ] || {
	echo "bench: prototarget did not start; see $OUT/raw/target.out" >&2
	exit 1
}
case $HTTP_ADDR$GRPC_ADDR in 127.0.0.1:*127.0.0.1:*) ;; *)
	echo "bench: prototarget is not on 127.0.0.1 ($HTTP_ADDR, $GRPC_ADDR)" >&2
	exit 1
	;;
esac

LIMIT=$((DUR + 60)) # a run that outlives this is killed
WS_MSG=ping-0123456789 # no quotes or commas: Crankfire's --ws-messages is a CSV list

# Flags that forgeload load and Crankfire share, with the same meaning.
common_flags() { # common_flags PROTO
	local f=(--concurrency "$CONNS" --duration "${DUR}s")
	case $1 in
	ws) f+=(--protocol websocket --target "ws://$HTTP_ADDR/ws" --ws-receive-timeout 0s)
		for _ in $(seq "$MSGS"); do f+=(--ws-messages "$WS_MSG"); done ;;
	sse) f+=(--protocol sse --target "http://$HTTP_ADDR/events" --sse-max-events "$EVENTS" --sse-read-timeout 10s) ;;
	grpc) f+=(--protocol grpc --target "$GRPC_ADDR" --grpc-proto-file "$OUT/greeter.proto"
		--grpc-service bench.Greeter --grpc-method SayHello --grpc-message '{"name":"bench"}') ;;
	esac
	printf '%s\n' "${f[@]}"
}

k6_script() { # k6_script PROTO FILE
	case $1 in
	ws) cat >"$2" <<JS
import ws from 'k6/ws';
export const options = { vus: $CONNS, duration: '${DUR}s', summaryTrendStats: ['p(50)', 'p(90)', 'p(99)'] };
export default function () {
  ws.connect('ws://$HTTP_ADDR/ws', null, function (s) {
    s.on('open', function () {
      for (let i = 0; i < $MSGS; i++) s.send('$WS_MSG');
      s.close();
    });
  });
}
JS
		;;
	grpc) cat >"$2" <<JS
import grpc from 'k6/net/grpc';
const client = new grpc.Client();
client.load(['$OUT'], 'greeter.proto');
export const options = { vus: $CONNS, duration: '${DUR}s', summaryTrendStats: ['p(50)', 'p(90)', 'p(99)'] };
let connected = false;
export default function () {
  if (!connected) { client.connect('$GRPC_ADDR', { plaintext: true }); connected = true; }
  const r = client.invoke('bench.Greeter/SayHello', { name: 'bench' });
  if (r.status !== grpc.StatusOK) throw new Error('status ' + r.status);
}
JS
		;;
	esac
}

# run GEN PROTO: one bounded run; writes $OUT/raw/GEN-PROTO.json with
# successes, failures, duration_ms, p50/p90/p99_latency_ms.
run() {
	local gen=$1 proto=$2 raw=$OUT/raw/$1-$2
	local flags
	mapfile -t flags < <(common_flags "$proto")
	curl -fsS "http://$HTTP_ADDR/__bench/stats" >"$raw.before.json"
	log "$gen $proto: $DUR s, $CONNS workers"
	case $gen in
	forgeload)
		timeout "$LIMIT" "$OUT/forgeload" load --quiet "${flags[@]}" --json-output "$raw.out.json" >"$raw.log" 2>&1 || true
		[ -s "$raw.out.json" ] && jq '{successes, failures, duration_ms, p50_latency_ms, p90_latency_ms, p99_latency_ms}' "$raw.out.json" >"$raw.json"
		;;
	crankfire)
		timeout "$LIMIT" "$CRANKFIRE_BIN" "${flags[@]}" --json-output >"$raw.out.json" 2>"$raw.log" </dev/null || true
		jq '{successes, failures, duration_ms, p50_latency_ms, p90_latency_ms, p99_latency_ms}' "$raw.out.json" >"$raw.json" 2>>"$raw.log" || rm -f "$raw.json"
		;;
	k6)
		k6_script "$proto" "$raw.js"
		local trend=ws_session_duration
		[ "$proto" = grpc ] && trend=grpc_req_duration
		timeout "$LIMIT" "$K6_BIN" run --quiet --no-usage-report --summary-export "$raw.out.json" "$raw.js" >"$raw.log" 2>&1 </dev/null || true
		[ -s "$raw.out.json" ] && jq --arg t "$trend" --argjson d "$((DUR * 1000))" '{
			successes: (.metrics.iterations.count // 0),
			failures: (.metrics.iteration_errors.count // 0),
			duration_ms: $d,
			p50_latency_ms: .metrics[$t]["p(50)"], p90_latency_ms: .metrics[$t]["p(90)"], p99_latency_ms: .metrics[$t]["p(99)"]}' "$raw.out.json" >"$raw.json"
		;;
	esac
	# Messages a generator left in socket buffers are read after it exits:
	# wait (at most 10 s) until the counts stop moving, so that they are
	# counted for this generator and not the next.
	local prev= now
	for _ in $(seq 20); do
		now=$(curl -fsS "http://$HTTP_ADDR/__bench/stats")
		[ "$now" = "$prev" ] && break
		prev=$now
		sleep 0.5
	done
	echo "$now" >"$raw.after.json"
	[ -s "$raw.json" ] || log "$gen $proto produced no result; see $raw.log"
}

# seen GEN PROTO: what the server counted during the run, per second of the
# generator's own duration (WebSocket messages read, gRPC calls answered)
seen() {
	local raw=$OUT/raw/$1-$2 key
	case $2 in ws) key=ws_messages ;; grpc) key=grpc_calls ;; *) return ;; esac
	jq -n --slurpfile b "$raw.before.json" --slurpfile a "$raw.after.json" --slurpfile r "$raw.json" \
		--arg k "$key" '($a[0][$k] - $b[0][$k]) / ($r[0].duration_ms / 1000) | floor'
}

# per-session units: messages per WebSocket session, events per SSE session, 1 per gRPC call
unit() { case $1 in ws) echo "$MSGS" ;; sse) echo "$EVENTS" ;; grpc) echo 1 ;; esac }
name() { case $1 in ws) echo "WebSocket messages/s" ;; sse) echo "SSE events/s" ;; grpc) echo "gRPC calls/s" ;; esac }

emit "# forgeload vs. Crankfire and k6: WebSocket, SSE, gRPC"
emit ""
emit "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg), $CONNS workers, ${DUR} s per run, $MSGS messages per WebSocket session, $EVENTS events per SSE session"
for proto in $PROTOS; do
	gens=(forgeload)
	for p in "${PEERS[@]}"; do
		[ "$p" = k6 ] && [ "$proto" = sse ] && { log "k6 has no built-in SSE client (it needs the xk6-sse extension): no k6 row for SSE"; continue; }
		gens+=("$p")
	done
	for g in "${gens[@]}"; do run "$g" "$proto"; done
	emit ""
	emit "## $(name "$proto") (session/call latency, ms)"
	emit ""
	emit "| generator | $(name "$proto") | server counted /s | sessions or calls ok | failed | p50 | p90 | p99 | forgeload / generator |"
	emit "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	ours=
	for g in "${gens[@]}"; do
		f=$OUT/raw/$g-$proto.json
		if [ ! -s "$f" ]; then
			emit "| $g | no result | | | | | | | |"
			continue
		fi
		rate=$(jq --argjson u "$(unit "$proto")" '.successes * $u / (.duration_ms / 1000) | floor' "$f")
		[ "$g" = forgeload ] && ours=$rate
		ratio=
		[ -n "$ours" ] && [ "$rate" -gt 0 ] && ratio=$(awk -v a="$ours" -v b="$rate" 'BEGIN{printf "%.2f", a/b}')
		emit "| $g | $rate | $(seen "$g" "$proto") | $(jq -r '[.successes, .failures, (.p50_latency_ms*100|round/100), (.p90_latency_ms*100|round/100), (.p99_latency_ms*100|round/100)] | join(" | ")' "$f") | $ratio |"
	done
done
emit ""
emit "load average after: $(cut -d' ' -f1-3 /proc/loadavg); raw outputs in $OUT/raw"
