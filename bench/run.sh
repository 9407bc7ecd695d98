#!/usr/bin/env bash
# bench/run.sh runs forgeload's load engine beside wrk, hey and vegeta on this
# machine, against bench/target on 127.0.0.1, and prints one Markdown table
# per scenario. See docs/benchmarks.md for what each scenario measures.
#
#   bench/run.sh [throughput|rate|stall|rss|alloc|all]   (default all)
#
# Environment (all optional):
#   BENCH_OUT       directory for raw outputs (default: a new /tmp/forgeload-bench.XXXXXX)
#   BENCH_REPS      repetitions per measurement; the median is reported (default 3)
#   BENCH_DURATION  seconds per throughput and rate run (default 10)
#   BENCH_RATES     fixed rates for the rate scenario (default "5000 20000 50000")
#   BENCH_STALL_SECONDS  seconds of the stall probe (default 20)
#   BENCH_EXTRA_THROUGHPUT  extra rows of the throughput table (default "engine-nethttp engine-raw")
#   BENCH_EXTRA_RATE        extra rows of the rate and stall tables, e.g. "engine-nethttp" (default none)
#   BENCH_NICE      nice value for generator and target, e.g. -10 on a shared box (default 0)
#   BENCH_GEN_CPU, BENCH_TARGET_CPU   cores for generator and target (default 0 and 1)
#
# Every run is bounded by its duration plus a timeout, and all traffic goes to
# the target this script starts on 127.0.0.1.
set -euo pipefail

SCENARIO=${1:-all}
case $SCENARIO in
throughput | rate | stall | rss | alloc | all) ;;
*)
	echo "usage: $0 [throughput|rate|stall|rss|alloc|all]" >&2
	exit 2
	;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${BENCH_OUT:-$(mktemp -d /tmp/forgeload-bench.XXXXXX)}
REPS=${BENCH_REPS:-3}
DUR=${BENCH_DURATION:-10}
RATES=${BENCH_RATES:-"5000 20000 50000"}
NICE=${BENCH_NICE:-0}
GEN_CPU=${BENCH_GEN_CPU:-0}
TARGET_CPU=${BENCH_TARGET_CPU:-1}
CONNS=50
VEGETA_VERSION=v12.12.0
BIN=${BENCH_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/forgeload-bench}
mkdir -p "$OUT/raw" "$BIN"
RESULTS=$OUT/results.md

log() { echo "bench: $*" >&2; }
emit() { echo "$*" | tee -a "$RESULTS"; }

# ---------------------------------------------------------------- install

apt_install() {
	local sudo=
	[ "$(id -u)" = 0 ] || sudo=sudo
	log "installing $* from Debian's packages"
	$sudo apt-get install -y "$@" >"$OUT/raw/apt.log" 2>&1 ||
		{ $sudo apt-get update >>"$OUT/raw/apt.log" 2>&1 && $sudo apt-get install -y "$@" >>"$OUT/raw/apt.log" 2>&1; } ||
		{
			echo "bench: apt-get install $* failed; see $OUT/raw/apt.log" >&2
			exit 1
		}
}

install_peers() {
	local missing=()
	command -v wrk >/dev/null || missing+=(wrk)
	command -v hey >/dev/null || missing+=(hey)
	command -v jq >/dev/null || missing+=(jq)
	command -v curl >/dev/null || missing+=(curl)
	command -v taskset >/dev/null || missing+=(util-linux)
	[ -x /usr/bin/time ] || missing+=(time)
	[ ${#missing[@]} = 0 ] || apt_install "${missing[@]}"

	VEGETA=$BIN/vegeta-$VEGETA_VERSION
	if [ ! -x "$VEGETA" ]; then
		# go install ...@latest is refused here: build the pinned version
		# from a throwaway module; none of its code enters this repository.
		local mod
		mod=$(mktemp -d /tmp/vegeta-build.XXXXXX)
		log "building vegeta $VEGETA_VERSION in $mod"
		(
			cd "$mod"
			printf 'module vegetabuild\n\ngo 1.26\n' >go.mod
			printf 'package main\n' >main.go
			GOFLAGS=-mod=mod go get "github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
			GOFLAGS=-mod=mod go build -o "$VEGETA" github.com/tsenart/vegeta/v12
		) >"$OUT/raw/vegeta-build.log" 2>&1 || {
			echo "bench: building vegeta failed; see $OUT/raw/vegeta-build.log" >&2
			exit 1
		}
		rm -rf "$mod"
	fi
}

build_ours() {
	log "building bench/target and forgeload"
	(cd "$ROOT" && go build -o "$OUT/target" ./bench/target && go build -o "$OUT/flrun" ./bench/flrun)
	FORGELOAD=
	if (cd "$ROOT" && go build -tags grpcnotrace -o "$OUT/forgeload" ./cmd/runner) >"$OUT/raw/forgeload-build.log" 2>&1 &&
		"$OUT/forgeload" load --help >"$OUT/raw/forgeload-load-help.txt" 2>&1; then
		FORGELOAD=$OUT/forgeload
	else
		log "forgeload load is not available yet; the engine is measured through flrun instead (see $OUT/raw/forgeload-build.log)"
	fi
	# Ours: the command when it builds, else the engine through flrun on the
	# same driver path. The throughput table adds the engine over net/http
	# and over flrun's raw client, to show what the HTTP client costs.
	OURS=(forgeload)
	[ -n "$FORGELOAD" ] || OURS=(engine-h1)
	read -r -a EXTRA_TP <<<"${BENCH_EXTRA_THROUGHPUT-engine-nethttp engine-raw}"
	read -r -a EXTRA_RATE <<<"${BENCH_EXTRA_RATE-}"
}

# ---------------------------------------------------------------- target

TARGET_PID=
URL=
start_target() { # mode
	stop_target
	local logf=$OUT/raw/target-$1.log
	: >"$logf"
	nice -n "$NICE" taskset -c "$TARGET_CPU" "$OUT/target" -mode "$1" -port 0 >"$logf" 2>&1 &
	TARGET_PID=$!
	for _ in $(seq 100); do
		URL=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$logf")
		[ -n "$URL" ] && return 0
		sleep 0.05
	done
	echo "bench: target did not start; see $logf" >&2
	exit 1
}
stop_target() {
	if [ -n "$TARGET_PID" ]; then
		kill "$TARGET_PID" 2>/dev/null || true
		wait "$TARGET_PID" 2>/dev/null || true
		TARGET_PID=
	fi
}
trap stop_target EXIT
reset_target() { curl -fsS "$URL/__bench/reset" >/dev/null; }
target_stats() { curl -fsS "$URL/__bench/stats" >"$1"; }

# ---------------------------------------------------------------- helpers

# gen RUNID SECONDS CMD...: run a generator pinned to the generator core under
# /usr/bin/time -v, bounded by a timeout; output in raw/RUNID.{out,err,time}.
gen() {
	local id=$1 secs=$2
	shift 2
	local r=$OUT/raw/$id
	timeout --kill-after=5 $((secs + 30)) nice -n "$NICE" taskset -c "$GEN_CPU" \
		/usr/bin/time -v -o "$r.time" "$@" >"$r.out" 2>"$r.err" || log "$id exited with $? (see $r.err)"
}

# cpu_s RUNID: the generator's CPU time, user + system, in seconds.
cpu_s() { awk -F: '/User time|System time/ {s += $2} END {if (NR) printf "%.2f", s}' "$OUT/raw/$1.time" 2>/dev/null; }

rss_mb() { awk -F: '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$OUT/raw/$1.time" 2>/dev/null; }

# median: the median of the numbers on stdin ("n/a" when there are none).
median() {
	grep -E '^-?[0-9.]+(e[-+]?[0-9]+)?$' | sort -g |
		awk '{a[NR]=$1} END {if (NR==0) print "n/a"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}

# put RUNID KEY VALUE / med PREFIX KEY: per-run metrics and their median over
# the runs whose id starts with PREFIX.
put() { echo "$3" >"$OUT/raw/$1.m.$2"; }
med() {
	local f
	for f in "$OUT/raw/$1"-r[0-9]*.m."$2"; do [ -e "$f" ] && cat "$f"; done | median
}

fmt() { # fmt VALUE DECIMALS
	case $1 in n/a | "") echo n/a ;; *) printf "%.${2}f" "$1" ;; esac
}
ratio() { # ratio A B
	case "$1$2" in *n/a*) echo n/a ;; *) awk -v a="$1" -v b="$2" 'BEGIN {if (b==0) print "n/a"; else printf "%.2f×", a/b}' ;; esac
}

# percentiles of vegeta's raw results (latency is CSV field 3, in ns),
# nearest rank, in ms: p50 p90 p99 p99.9.
vegeta_pcts() {
	"$VEGETA" encode --to csv <"$1" | cut -d, -f3 | sort -n |
		awk '{a[NR]=$1} END {
			n=split("0.5 0.9 0.99 0.999", q, " ")
			for (i=1; i<=n; i++) { k=int(q[i]*NR+0.999999); if (k<1) k=1; printf "%.3f ", a[k]/1e6 }
			print "" }'
}

# target_ticks: the target's CPU time so far, in clock ticks.
target_ticks() { awk '{print $14 + $15}' "/proc/$TARGET_PID/stat" 2>/dev/null || echo 0; }
CLK_TCK=$(getconf CLK_TCK)

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

header() {
	emit ""
	emit "### $1"
	emit ""
	emit "$(date -u +%FT%TZ), load average before: $(loadavg), $REPS runs each, median shown; generator on core $GEN_CPU, target on core $TARGET_CPU, nice $NICE, raw outputs in $OUT/raw."
	emit ""
}

# ---------------------------------------------------------------- tools

run_wrk() { gen "$1" "$2" wrk -t1 -c"$CONNS" -d"$2"s --latency "$URL/"; put "$1" rps "$(awk '/^Requests\/sec/ {print $2}' "$OUT/raw/$1.out")"; }
run_hey() { gen "$1" "$2" hey -c "$CONNS" -z "$2"s "$URL/"; put "$1" rps "$(awk '/Requests\/sec/ {print $2}' "$OUT/raw/$1.out")"; }

run_vegeta() { # RUNID SECONDS RATE (0: as fast as possible)
	local id=$1 r=$OUT/raw/$1
	local workers=()
	[ "$3" != 0 ] || workers=(-workers="$CONNS") # as fast as possible: start all 50 at once
	echo "GET $URL/" >"$OUT/raw/vegeta-targets.txt"
	gen "$id" "$2" "$VEGETA" attack -targets="$OUT/raw/vegeta-targets.txt" -rate="$3" -max-workers="$CONNS" "${workers[@]}" -duration="$2s" -output="$r.bin"
	"$VEGETA" report -type=json "$r.bin" >"$r.json"
	put "$id" rps "$(jq '.rate' "$r.json")"
	put "$id" errors "$(jq '.requests - (.status_codes["200"] // 0)' "$r.json")"
	if [ "$3" != 0 ]; then
		read -r p50 p90 p99 p999 < <(vegeta_pcts "$r.bin")
		put "$id" p50 "$p50"
		put "$id" p90 "$p90"
		put "$id" p99 "$p99"
		put "$id" p999 "$p999"
	fi
	rm -f "$r.bin" # up to ~100 MB at 50k req/s; the JSON report stays
}

# summary_metrics RUNID: metrics from the engine's JSON summary (the format
# of forgeload load --json-output and of flrun).
summary_metrics() {
	local id=$1 r=$OUT/raw/$1
	[ -s "$r.json" ] || return 0
	put "$id" rps "$(jq '.rps' "$r.json")"
	put "$id" errors "$(jq '.errors' "$r.json")"
	put "$id" dropped "$(jq '.dropped' "$r.json")"
	put "$id" late "$(jq '.late' "$r.json")"
	put "$id" p50 "$(jq '.latency.p50_ms' "$r.json")"
	put "$id" p90 "$(jq '.latency.p90_ms' "$r.json")"
	put "$id" p99 "$(jq '.latency.p99_ms' "$r.json")"
	put "$id" p999 "$(jq '.latency.p99_9_ms' "$r.json")"
}

run_forgeload() { # RUNID SECONDS RATE (0: closed model)
	local rate=()
	[ "$3" = 0 ] || rate=(--rate "$3")
	gen "$1" "$2" "$FORGELOAD" load --quiet --target "$URL/" --concurrency "$CONNS" --duration "$2s" "${rate[@]}" --json-output "$OUT/raw/$1.json"
	summary_metrics "$1"
}

# engine-h1, engine-nethttp, engine-raw: the load engine driven by flrun,
# with httpload's HTTP/1.1 fast path (what forgeload load uses; the stand-in
# when the command does not build), with httpload over net/http, and with
# flrun's own raw HTTP/1.1 client.
run_flrun() { # CLIENT RUNID SECONDS RATE
	gen "$2" "$3" "$OUT/flrun" -target "$URL/" -client "$1" -c "$CONNS" -d "$3s" -rate "$4" -json "$OUT/raw/$2.json"
	summary_metrics "$2"
}
run_engine-h1() { run_flrun h1 "$@"; }
run_engine-nethttp() { run_flrun nethttp "$@"; }
run_engine-raw() { run_flrun raw "$@"; }

# measure SCEN TOOL SECONDS RATE: REPS runs of TOOL, each on a freshly reset
# target, recording the target's own view and the generator's peak RSS.
measure() {
	local scen=$1 tool=$2 secs=$3 rate=$4 i id
	for i in $(seq "$REPS"); do
		id=$scen-$tool-r$i
		reset_target
		log "$id: $tool for ${secs}s at rate $rate"
		local t0
		t0=$(target_ticks)
		"run_$tool" "$id" "$secs" "$rate"
		target_stats "$OUT/raw/$id.target.json"
		put "$id" tcpu "$(awk -v a="$t0" -v b="$(target_ticks)" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", (b - a) / hz}')"
		put "$id" later100 "$(jq '.max_100ms_after_1s' "$OUT/raw/$id.target.json")"
		put "$id" rss "$(rss_mb "$id")"
		put "$id" cpu "$(cpu_s "$id")"
		put "$id" percpu "$(jq --arg c "$(cpu_s "$id")" 'if ($c|tonumber) > 0 then .total / ($c|tonumber) else "n/a" end' "$OUT/raw/$id.target.json")"
		put "$id" seen "$(jq '.total' "$OUT/raw/$id.target.json")"
		put "$id" first100 "$(jq '.first_100ms' "$OUT/raw/$id.target.json")"
	done
}

# ---------------------------------------------------------------- scenarios

# cmdline TOOL SECONDS RATE: the command as shown in the tables.
cmdline() {
	local r=
	case $1 in
	wrk) echo "wrk -t1 -c$CONNS -d${2}s" ;;
	hey) echo "hey -c $CONNS -z ${2}s" ;;
	vegeta)
		[ "$3" = 0 ] && r=" -workers=$CONNS"
		echo "vegeta attack -rate=$3 -max-workers=$CONNS$r -duration=${2}s"
		;;
	forgeload)
		[ "$3" = 0 ] || r=" --rate $3"
		echo "forgeload load --quiet --target URL --concurrency $CONNS --duration ${2}s$r"
		;;
	engine-*)
		[ "$3" = 0 ] || r=" -rate $3"
		echo "flrun -client ${1#engine-} -c $CONNS -d ${2}s$r"
		;;
	esac
}

scenario_throughput() {
	start_target fast
	header "(a) Closed-loop maximum throughput, $CONNS connections, ${DUR}s"
	local t tools=(wrk hey vegeta "${OURS[@]}" "${EXTRA_TP[@]}")
	for t in "${tools[@]}"; do measure tp "$t" "$DUR" 0; done
	local wrk wrkcpu
	wrk=$(med tp-wrk rps)
	wrkcpu=$(med tp-wrk percpu)
	emit "| tool | command | req/s | ratio to wrk | req/s seen by target | CPU s (user+sys) | requests per CPU-second | ratio to wrk per CPU-second | target CPU s | peak RSS MB |"
	emit "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for t in "${tools[@]}"; do
		local rps seen percpu
		rps=$(med "tp-$t" rps)
		seen=$(med "tp-$t" seen)
		percpu=$(med "tp-$t" percpu)
		[ "$seen" = n/a ] || seen=$(awk -v n="$seen" -v d="$DUR" 'BEGIN {print n/d}')
		emit "| $t | \`$(cmdline "$t" "$DUR" 0)\` | $(fmt "$rps" 0) | $(ratio "$rps" "$wrk") | $(fmt "$seen" 0) | $(fmt "$(med "tp-$t" cpu)" 2) | $(fmt "$percpu" 0) | $(ratio "$percpu" "$wrkcpu") | $(fmt "$(med "tp-$t" tcpu)" 2) | $(fmt "$(med "tp-$t" rss)" 1) |"
	done
	emit ""
	emit "Requests per CPU-second is the target's count divided by the generator's user+system time: on a shared machine it is steadier than req/s, because it does not depend on how much of the core the generator got. Target CPU s near the run's length means the target, not the generator, was the ceiling."
	emit "Goal: forgeload ≥ 0.70× wrk."
}

scenario_rate() {
	start_target fast
	header "(b) Fixed rates, $CONNS connections (\`-max-workers=$CONNS\` for vegeta), ${DUR}s"
	local r t tools=("${OURS[@]}" vegeta "${EXTRA_RATE[@]}")
	for r in $RATES; do
		for t in "${tools[@]}"; do measure "rate$r" "$t" "$DUR" "$r"; done
	done
	emit "| rate | tool | achieved req/s (tool) | sent/expected (target) | first 100 ms: seen/expected | busiest later 100 ms | p50 ms | p90 ms | p99 ms | errors | dropped | peak RSS MB |"
	emit "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for r in $RATES; do
		for t in "${tools[@]}"; do
			local p=rate$r-$t seen first
			seen=$(med "$p" seen)
			first=$(med "$p" first100)
			emit "| $r | $t | $(fmt "$(med "$p" rps)" 0) | $(ratio "$seen" $((r * DUR))) | $(fmt "$first" 0)/$((r / 10)) ($(ratio "$first" $((r / 10)))) | $(ratio "$(med "$p" later100)" $((r / 10))) | $(fmt "$(med "$p" p50)" 2) | $(fmt "$(med "$p" p90)" 2) | $(fmt "$(med "$p" p99)" 2) | $(fmt "$(med "$p" errors)" 0) | $(fmt "$(med "$p" dropped)" 0) | $(fmt "$(med "$p" rss)" 1) |"
		done
	done
	emit ""
	emit "Commands: $(cmdline "${OURS[0]}" "$DUR" N); $(cmdline vegeta "$DUR" N)."
	emit "Goals: achieved within ±1% of the rate, no start-up burst (first 100 ms ≈ 1.00× expected), forgeload's p99 ≤ vegeta's at the same rate."
}

scenario_stall() {
	start_target stall
	local secs=${BENCH_STALL_SECONDS:-20} r=1000
	header "(c) Stall probe: $r req/s for ${secs}s, the target freezing 1 s of every 5 s"
	local t tools=("${OURS[@]}" vegeta "${EXTRA_RATE[@]}")
	for t in "${tools[@]}"; do measure stall "$t" "$secs" "$r"; done
	emit "| tool | p50 ms | p90 ms | p99 ms | p99.9 ms | sent/expected (target) | dropped |"
	emit "|---|---:|---:|---:|---:|---:|---:|"
	emit "| expected | ≈0 | 500 | 950 | 995 | 1.00× | 0 |"
	for t in "${tools[@]}"; do
		emit "| $t | $(fmt "$(med "stall-$t" p50)" 1) | $(fmt "$(med "stall-$t" p90)" 1) | $(fmt "$(med "stall-$t" p99)" 1) | $(fmt "$(med "stall-$t" p999)" 1) | $(ratio "$(med "stall-$t" seen)" $((r * secs))) | $(fmt "$(med "stall-$t" dropped)" 0) |"
	done
	emit ""
	emit "Commands: $(cmdline "${OURS[0]}" "$secs" $r); $(cmdline vegeta "$secs" $r)."
	emit "Goal: forgeload's p90, p99 and p99.9 each within 5% of 500, 950 and 995 ms (475–525, 902–998, 945–1045)."
}

scenario_rss() {
	start_target fast
	local secs=5 t
	header "(d) Peak RSS (/usr/bin/time -v), $CONNS connections, ${secs}s runs"
	for t in "${OURS[@]}" vegeta; do
		measure rss-closed "$t" "$secs" 0
		measure rss-20k "$t" "$secs" 20000
	done
	REPS=1 measure rss-closed wrk "$secs" 0
	REPS=1 measure rss-closed hey "$secs" 0
	emit "| tool | closed loop, as fast as possible | 20,000 req/s |"
	emit "|---|---:|---:|"
	for t in "${OURS[@]}" vegeta wrk hey; do
		emit "| $t | $(fmt "$(med "rss-closed-$t" rss)" 1) MB | $(fmt "$(med "rss-20k-$t" rss)" 1) MB |"
	done
	emit ""
	emit "wrk and hey: one run each, for scale. Goal: forgeload ≤ 32 MB at $CONNS connections."
}

scenario_alloc() {
	header "(e) Allocations on the scheduler and recording path"
	local f=$OUT/raw/alloc-bench.txt
	log "go test -bench ./internal/pkg/load/..."
	(cd "$ROOT" && timeout 600 nice -n "$NICE" go test -run '^$' -bench . -benchmem ./internal/pkg/load/...) >"$f" 2>&1 ||
		log "go test -bench exited with $? (see $f)"
	emit "Command: \`go test -run '^\$' -bench . -benchmem ./internal/pkg/load/...\`"
	emit ""
	emit "| package | benchmark | ns/op | B/op | allocs/op |"
	emit "|---|---|---:|---:|---:|"
	awk '
		/^pkg: / {pkg=$2; sub(".*/internal/pkg/", "", pkg)}
		/^Benchmark/ {
			ns=b=al="n/a"
			for (i=3; i<=NF; i++) { if ($(i)=="ns/op") ns=$(i-1); if ($(i)=="B/op") b=$(i-1); if ($(i)=="allocs/op") al=$(i-1) }
			name=$1; sub(/-[0-9]+$/, "", name)
			printf "| %s | %s | %s | %s | %s |\n", pkg, name, ns, b, al
		}' "$f" | tee -a "$RESULTS"
	emit ""
	emit "Goal: 0 allocs/op on the scheduler and recording path (BenchmarkRunOpen and BenchmarkRunClosed run one request per op)."
}

# ---------------------------------------------------------------- main

log "raw outputs in $OUT"
cd "$ROOT"
[ "$SCENARIO" = alloc ] || {
	install_peers
	build_ours
}
emit "## Run of $(date -u +%FT%TZ) ($SCENARIO)"
emit ""
emit "Machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), kernel $(uname -r), $(go version | cut -d' ' -f3-4); wrk $(wrk -v 2>&1 | head -1 | cut -d' ' -f2), vegeta $VEGETA_VERSION, hey $(dpkg-query -W -f='${Version}' hey 2>/dev/null || echo '?'); forgeload $(cd "$ROOT" && git rev-parse --short HEAD)."
case $SCENARIO in
all) for s in throughput rate stall rss alloc; do "scenario_$s"; done ;;
*) "scenario_$SCENARIO" ;;
esac
stop_target
log "tables in $RESULTS"
