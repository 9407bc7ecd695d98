#!/usr/bin/env bash
# bench/cluster/run.sh measures the aggregate throughput of 1, 2 and 3
# forgeload cluster worker processes on this machine: one redis-server, one
# bench/target on 127.0.0.1, N `clusterbench worker` processes (the daemon's
# pool and segment runner, without a forge) and one coordinator that splits
# a closed-loop test (or a fixed rate) over them. It prints a Markdown table;
# docs/benchmarks.md records a run and what limits it.
#
#   bench/cluster/run.sh
#
# Environment (all optional):
#   BENCH_OUT          directory for raw outputs (default: a new /tmp/forgeload-cluster-bench.XXXXXX)
#   BENCH_DURATION     seconds per run (default 10)
#   BENCH_CONCURRENCY  closed-loop users over all workers (default 48)
#   BENCH_RATE         a fixed total rate in req/s instead of the closed loop (default 0: closed loop)
#   BENCH_WORKERS      worker counts to measure (default "1 2 3")
#   BENCH_REDIS_PORT   port of the private redis-server (default 16390)
#
# Every run is bounded by its duration plus a timeout, and all traffic goes
# to the target this script starts on 127.0.0.1.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$(mktemp -d /tmp/forgeload-cluster-bench.XXXXXX)}
DUR=${BENCH_DURATION:-10}
CONC=${BENCH_CONCURRENCY:-48}
RATE=${BENCH_RATE:-0}
COUNTS=${BENCH_WORKERS:-"1 2 3"}
RPORT=${BENCH_REDIS_PORT:-16390}
mkdir -p "$OUT/raw"

log() { echo "bench: $*" >&2; }

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

command -v redis-server >/dev/null || {
	echo "bench: redis-server is not on PATH (apt install redis-server)" >&2
	exit 1
}
log "building bench/target and bench/cluster into $OUT"
(cd "$ROOT" && go build -o "$OUT/target" ./bench/target && go build -tags grpcnotrace -o "$OUT/clusterbench" ./bench/cluster)

TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
pct() { echo $((($(cpu_ticks "$1") - ${before[$1]}) * 100 / TICKS / DUR)); }
CPU_ROWS=()

redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no >"$OUT/raw/redis.log" 2>&1 &
REDIS_PID=$!
PIDS+=($REDIS_PID)
REDIS=redis://127.0.0.1:$RPORT/0
for _ in $(seq 100); do
	redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break
	sleep 0.05
done

"$OUT/target" -port 0 >"$OUT/raw/target.log" 2>&1 &
TARGET_PID=$!
PIDS+=($TARGET_PID)
URL=
for _ in $(seq 100); do
	URL=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$OUT/raw/target.log")
	[ -n "$URL" ] && break
	sleep 0.05
done
[ -n "$URL" ] || {
	echo "bench: target did not start; see $OUT/raw/target.log" >&2
	exit 1
}

: >"$OUT/results.jsonl"
for n in $COUNTS; do
	wpids=()
	for i in $(seq "$n"); do
		"$OUT/clusterbench" worker -redis "$REDIS" -id "w$i" 2>"$OUT/raw/worker-$n-$i.log" &
		wpids+=($!)
	done
	mode="closed loop, $CONC users"
	[ "$RATE" != 0 ] && mode="$RATE req/s"
	log "$n worker(s), $mode, ${DUR}s"
	declare -A before=()
	for p in "${wpids[@]}" "$TARGET_PID" "$REDIS_PID"; do before[$p]=$(cpu_ticks "$p"); done
	timeout $((DUR + 60)) "$OUT/clusterbench" coord -redis "$REDIS" -workers "$n" -target "$URL/" \
		-duration "${DUR}s" -concurrency "$CONC" -rate "$RATE" >>"$OUT/results.jsonl" 2>"$OUT/raw/coord-$n.log"
	# CPU used during the run (start lead and final flush included), in
	# percent of one core over the run's duration.
	wcpu=()
	for p in "${wpids[@]}"; do wcpu+=("$(pct "$p")"); done
	CPU_ROWS+=("| $n | $(IFS=/; echo "${wcpu[*]}" | sed 's|/| / |g') | $(pct "$TARGET_PID") | $(pct "$REDIS_PID") |")
	for p in "${wpids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${wpids[@]}"; do wait "$p" 2>/dev/null || true; done
done

echo "$(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), ${DUR}s per run, raw outputs in $OUT"
echo
"$OUT/clusterbench" table <"$OUT/results.jsonl"
echo
echo "CPU during each run, % of one core (the machine has $(nproc) cores):"
echo
echo "| workers | each worker | target | redis |"
echo "|---|---|---|---|"
printf '%s\n' "${CPU_ROWS[@]}"
