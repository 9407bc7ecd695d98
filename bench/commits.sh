#!/usr/bin/env bash
# bench/commits.sh: compare the load engine of two commits, interleaved on
# one machine, as ratios with their spread.
#
#   bench/commits.sh OLD_COMMIT NEW_COMMIT [PAIRS]
#
# It builds `forgeload` at both commits from `git archive` (nothing is
# checked out; the commits need not contain this script) with the
# Dockerfile's flags (CGO_ENABLED=0 -tags grpcnotrace -trimpath; BENCH_CGO=1
# builds with cgo as a plain `go build` does, BENCH_TAGS= without the tag),
# builds bench/target from this tree, starts the
# target on core TARGET_CPU (1), and runs PAIRS (default 9) pairs of closed
# loops on GEN_CPUS (0): `forgeload load --quiet --concurrency 50
# --duration DURATION (5s)`, old then new in odd pairs and new then old in
# even ones, so that neither always runs second. For each run it reads the
# requests from the JSON summary and the generator's CPU time (user +
# system) and peak RSS from /usr/bin/time, and prints:
#   - per pair, the ratio new/old of requests per generator CPU-second,
#     which depends far less on what else the machine runs than req/s does;
#   - the median ratio, its range and quartiles, and in how many pairs
#     new was behind;
#   - the peak RSS of each binary (median and max of its runs).
# With BENCH_RATES="5000 20000 50000" it then runs each binary once at each
# fixed rate for DURATION and prints the requests the target counted against
# rate × duration (exact is 1.00×).
#
# Needs git, go, taskset, jq, curl and /usr/bin/time (Debian's time
# package). Traffic goes to 127.0.0.1 only; every run is bounded by a 60 s
# timeout. Raw outputs stay in BENCH_OUT (a temporary directory by default);
# run again with the same BENCH_OUT, the binaries are not rebuilt.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_COMMIT NEW_COMMIT [PAIRS]" >&2; exit 2; }
OLD=$1 NEW=$2 PAIRS=${3:-9}
DURATION=${DURATION:-5s}
GEN_CPUS=${GEN_CPUS:-0}
TARGET_CPU=${TARGET_CPU:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${BENCH_OUT:-$(mktemp -d)}
mkdir -p "$OUT"
TP=
trap '[ -n "$TP" ] && kill "$TP" 2>/dev/null; true' EXIT

build() { # build NAME COMMIT; a binary already in BENCH_OUT from the same commit and flags is reused
	local src=$OUT/src-$1 id
	id="$(git -C "$ROOT" rev-parse "$2^{commit}") cgo=${BENCH_CGO:-0} tags=${BENCH_TAGS-grpcnotrace}"
	if [ ! -x "$OUT/forgeload-$1" ] || [ "$(cat "$OUT/forgeload-$1.id" 2>/dev/null)" != "$id" ]; then
		rm -rf "$src" && mkdir -p "$src"
		git -C "$ROOT" archive "$2" | tar -x -C "$src"
		(cd "$src" && CGO_ENABLED=${BENCH_CGO:-0} go build -tags "${BENCH_TAGS-grpcnotrace}" -trimpath -o "$OUT/forgeload-$1" ./cmd/runner)
		echo "$id" >"$OUT/forgeload-$1.id"
	fi
	echo "$1 = $(git -C "$ROOT" rev-parse --short "$2"): $(stat -c %s "$OUT/forgeload-$1") bytes"
}
build old "$OLD"
build new "$NEW"
(cd "$ROOT" && go build -o "$OUT/target" ./bench/target)
taskset -c "$TARGET_CPU" "$OUT/target" -mode fast -port 0 >"$OUT/target.log" 2>&1 &
TP=$!
URL=
for _ in $(seq 100); do
	URL=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$OUT/target.log")
	[ -n "$URL" ] && break
	sleep 0.05
done
[ -n "$URL" ] || { echo "commits: the target did not start" >&2; exit 1; }

run() { # run NAME TAG [extra load flags]: prints "requests cpu_s rss_kb"
	local v=$1 tag=$2
	shift 2
	local json=$OUT/$v-$tag.json
	/usr/bin/time -f "%U %S %M" -o "$OUT/$v-$tag.time" timeout 60 taskset -c "$GEN_CPUS" "$OUT/forgeload-$v" load --quiet \
		--target "$URL/" --concurrency 50 --duration "$DURATION" --json-output "$json" "$@" >/dev/null 2>"$OUT/$v-$tag.err" || true
	local req
	req=$(jq -r '.requests // 0' "$json" 2>/dev/null || echo 0)
	# the last line: GNU time writes "Command exited with non-zero status N"
	# above it when the run fails (an INVALID run exits 1)
	tail -1 "$OUT/$v-$tag.time" | awk -v r="$req" '{printf "%d %.3f %d\n", r, $1 + $2, $3}'
	tail -1 "$OUT/$v-$tag.err" | grep -q '^forgeload: INVALID' && echo "$v $tag: $(tail -1 "$OUT/$v-$tag.err")" >&2
	true
}

echo "$(date -u +%FT%TZ) load average before: $(cut -d' ' -f1-3 /proc/loadavg); closed loop, 50 connections, $DURATION, generator on CPU $GEN_CPUS"
: >"$OUT/pairs"
for i in $(seq "$PAIRS"); do
	order="old new"
	[ $((i % 2)) -eq 0 ] && order="new old"
	for v in $order; do
		read -r req cpu rss < <(run "$v" "closed-$i")
		eval "${v}_req=$req ${v}_cpu=$cpu ${v}_rss=$rss"
	done
	# shellcheck disable=SC2154 # set by the eval above
	echo "$old_req $old_cpu $old_rss $new_req $new_cpu $new_rss" >>"$OUT/pairs"
	awk -v i="$i" -v o="$order" '{ro = $1 / $2; rn = $4 / $5; printf "pair %2d (%s): old %6d req %5.2f cpu-s %7.0f req/cpu-s %5.1f MB | new %6d req %5.2f cpu-s %7.0f req/cpu-s %5.1f MB | new/old %.3f\n", i, o, $1, $2, ro, $3 / 1024, $4, $5, rn, $6 / 1024, rn / ro}' <(tail -1 "$OUT/pairs")
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# quantile P of the sorted numbers on stdin, by linear interpolation
quantile() { sort -g | awk -v p="$1" '{a[NR] = $1} END {k = 1 + (NR - 1) * p; i = int(k); printf "%.3f", a[i] + (k - i) * (a[i + 1] - a[i])}'; }
awk '{print ($4 / $5) / ($1 / $2)}' "$OUT/pairs" >"$OUT/ratios"
awk '{print $3 / 1024}' "$OUT/pairs" >"$OUT/rss-old"
awk '{print $6 / 1024}' "$OUT/pairs" >"$OUT/rss-new"
echo "requests per generator CPU-second, new/old over $(wc -l <"$OUT/ratios") pairs: median $(quantile 0.5 <"$OUT/ratios"), quartiles $(quantile 0.25 <"$OUT/ratios")-$(quantile 0.75 <"$OUT/ratios"), range $(quantile 0 <"$OUT/ratios")-$(quantile 1 <"$OUT/ratios"); new behind in $(awk '$1 < 1' "$OUT/ratios" | wc -l) pairs"
echo "peak RSS (MB): old median $(quantile 0.5 <"$OUT/rss-old") max $(quantile 1 <"$OUT/rss-old"), new median $(quantile 0.5 <"$OUT/rss-new") max $(quantile 1 <"$OUT/rss-new")"

for rate in ${BENCH_RATES:-}; do
	for v in old new; do
		curl -fsS "$URL/__bench/reset" >/dev/null
		read -r req cpu rss < <(run "$v" "rate-$rate" --rate "$rate")
		# let the target count the last responses before asking it
		sleep 0.5
		total=$(curl -fsS "$URL/__bench/stats" | jq -r .total)
		secs=${DURATION%s}
		awk -v v="$v" -v rate="$rate" -v t="$total" -v r="$req" -v s="$secs" -v m="$rss" 'BEGIN {printf "%s at %d req/s for %ss: target counted %d of %d (%.4fx), the tool reported %d, peak RSS %.1f MB\n", v, rate, s, t, rate * s, t / (rate * s), r, m / 1024}'
	done
done
echo "raw outputs: $OUT"
