#!/usr/bin/env bash
# bench/ab.sh: a short relative comparison of two forgeload binaries at fixed
# rates, for a change to the engine measured on a busy machine.
#
#   bench/ab.sh OLD_BINARY NEW_BINARY RATE...
#
# It starts bench/target on core 1 and runs, for each rate, three rounds of
# "OLD then NEW" on core 0 (`forgeload load --quiet --concurrency 50
# --duration 5s --rate RATE`), printing each run's achieved rate, p50/p90/p99,
# late and dropped arrivals from its JSON summary, and the CPU seconds the
# generator used (user + system, from /usr/bin/time). Alternating the two
# binaries spreads the machine's load over both; compare them run by run.
# Needs taskset, jq and /usr/bin/time (Debian's time package). Traffic goes to 127.0.0.1 only; each run is bounded
# by a 40 s timeout.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY RATE..." >&2; exit 2; }
old=$1 new=$2
shift 2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mktemp -d)
trap 'kill "$TP" 2>/dev/null || true; rm -rf "$OUT"' EXIT
(cd "$ROOT" && go build -o "$OUT/target" ./bench/target)
taskset -c 1 "$OUT/target" -mode fast -port 0 >"$OUT/target.log" 2>&1 &
TP=$!
URL=
for _ in $(seq 100); do
	URL=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$OUT/target.log")
	[ -n "$URL" ] && break
	sleep 0.05
done
[ -n "$URL" ] || { echo "ab: the target did not start" >&2; exit 1; }
echo "$(date -u +%FT%TZ) load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for rate in "$@"; do
	for i in 1 2 3; do
		for v in old new; do
			bin=$old
			[ $v = new ] && bin=$new
			out=$OUT/$v-$rate-$i.json
			/usr/bin/time -f "%U %S" -o "$OUT/cpu" timeout 40 taskset -c "${GEN_CPUS:-0}" "$bin" load --quiet --target "$URL/" --concurrency 50 --duration 5s --rate "$rate" --json-output "$out" >/dev/null 2>&1 || true
			printf "%-3s rate %6s run %s: %s cpu %s s\n" $v "$rate" $i "$(jq -r '"rps \(.rps|floor) p50 \(.latency.p50_ms) p90 \(.latency.p90_ms) p99 \(.latency.p99_ms) late \(.late) dropped \(.dropped)"' "$out")" "$(awk '{printf "%.2f", $1 + $2}' "$OUT/cpu")"
		done
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
