package threshold

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/forgeload/forgeload/internal/pkg/number"
	"github.com/forgeload/forgeload/internal/pkg/suggest"
)

// Metric names understood by [Parse]. They are Crankfire's names.
const (
	MetricDuration = "http_req_duration" // request latency
	MetricFailed   = "http_req_failed"   // failed requests
	MetricRequests = "http_requests"     // all requests
	MetricSUTCPU   = "sut_cpu"           // CPU of the system under test
	MetricSUTMem   = "sut_mem"           // memory of the system under test
	MetricChecks   = "checks"            // response checks that passed
)

// Operators understood by [Parse].
const (
	OpLess         = "<"
	OpLessEqual    = "<="
	OpGreater      = ">"
	OpGreaterEqual = ">="
	OpEqual        = "=="
	OpNotEqual     = "!="
)

// Threshold is one parsed pass/fail criterion. It is a plain value: copy it
// freely. Build it with [Parse] so that Value is in the canonical unit.
type Threshold struct {
	// Source is the threshold text as written, trimmed of surrounding space.
	Source string
	// Metric is one of MetricDuration, MetricFailed or MetricRequests.
	Metric string
	// Aggregate is the statistic of the metric: "p50", "p99.9" and other
	// percentiles, "avg", "min", "max" for durations; "rate" or "count" for
	// the others. "mean" and "p(99)" are normalised to "avg" and "p99".
	Aggregate string
	// Endpoint names the endpoint whose results are checked, or is empty
	// for the overall results.
	Endpoint string
	// Phase names the phase (a named load pattern or VU stage) whose
	// seconds are checked, or is empty for the whole run. It combines
	// with Endpoint: {endpoint:login,phase:plateau}.
	Phase string
	// Service names the system under test (the job's service id) that a
	// sut_cpu or sut_mem threshold checks, or is empty for the one with
	// the highest value.
	Service string
	// Unit is, for sut_cpu and sut_mem, "%" when Value is a fraction of the
	// target's limit, else "cores" (sut_cpu) or "bytes" (sut_mem).
	Unit string
	// BareCores is set for a sut_cpu bound written as a plain number, read
	// as cores: one at or above the service's CPU limit can never fail, so
	// it is refused when judged (the writer most likely meant a percent).
	BareCores bool
	// Op is one of the Op constants.
	Op string
	// Value is the bound in the canonical unit: seconds for durations, a
	// fraction in [0,1] for failure rates, requests per second for
	// http_requests:rate, a count for counts, and for sut_cpu and sut_mem
	// a fraction of the limit (Unit "%"), cores or bytes.
	Value float64
	// Baseline is set when the bound is the same metric measured in a
	// baseline run, times Factor ("< baseline * 1.10"); Value is then 0.
	Baseline bool
	Factor   float64
	// AbortOnFail stops the run as soon as the threshold fails on the
	// seconds measured so far, once Delay of the run has passed (the
	// caller judges it on the per-second snapshots). A config's mapping
	// item (expr, abort_on_fail, delay) sets them; Parse leaves them zero.
	AbortOnFail bool
	Delay       time.Duration
}

// String returns the threshold as written, followed by its bound in
// parentheses where the text leaves the unit to a rule: a plain number of
// milliseconds, requests per second or cores ("http_req_duration:p99 < 300
// (300ms)"), and a failure rate in its other spelling ("< 0.01 (1%)",
// "< 1% (0.01)"). Summaries and logs print it, so that no bound is read in
// a unit its writer did not mean.
func (t Threshold) String() string {
	if note := t.boundNote(); note != "" {
		return t.Source + " (" + note + ")"
	}
	return t.Source
}

// boundNote is the bound that String adds to the text, or "".
func (t Threshold) boundNote() string {
	if t.Baseline || t.Source == "" {
		return ""
	}
	// The value, and its unit if any, ends the text: a text that ends in a
	// digit or '.' has no unit.
	last, _ := utf8.DecodeLastRuneInString(t.Source)
	plain := last == '.' || last >= '0' && last <= '9'
	switch t.kind() {
	case kindRatio, kindAchieved:
		if plain {
			return formatNumber(t.Value*100) + "%"
		}
		return formatNumber(t.Value)
	case kindDuration:
		if plain {
			return formatNumber(t.Value*1e3) + "ms"
		}
	case kindRPS:
		if plain {
			return formatNumber(t.Value) + " req/s"
		}
	case kindCores:
		if plain && t.Value == 1 {
			return "1 core"
		}
		if plain {
			return formatNumber(t.Value) + " cores"
		}
	}
	return ""
}

// formatNumber formats v in at most 9 significant digits, without the
// trailing zeros and the float noise (0.1*3) that more would show.
func formatNumber(v float64) string {
	return strconv.FormatFloat(v, 'g', 9, 64)
}

// Percentile returns the percentile in [0,100] that t's aggregate names and
// true, or 0 and false when the aggregate is not a percentile.
func (t Threshold) Percentile() (float64, bool) {
	return parsePercentile(t.Aggregate)
}

// kind is the unit family of a threshold's value.
type kind int

const (
	kindDuration kind = iota // seconds
	kindRatio                // fraction of requests
	kindCount                // plain count
	kindRPS                  // requests per second
	kindShare                // fraction of a resource limit
	kindCores                // CPU cores
	kindBytes                // bytes of memory
	kindAchieved             // achieved/asked rate, a fraction that may pass 1
)

func (t Threshold) kind() kind {
	switch {
	case t.Metric == MetricAchieved:
		return kindAchieved
	case t.Unit == "%":
		return kindShare
	case t.Metric == MetricSUTCPU:
		return kindCores
	case t.Metric == MetricSUTMem:
		return kindBytes
	case t.Metric == MetricDuration:
		return kindDuration
	case t.Aggregate == "count":
		return kindCount
	case t.Metric == MetricFailed, t.Metric == MetricChecks, t.Metric == MetricDropped, t.Metric == MetricLate:
		return kindRatio
	default:
		return kindRPS
	}
}

var metricAggregates = map[string]string{
	MetricDuration: "p50, p90, p95, p99 (or any pNN such as p99.9), avg, min, max",
	MetricFailed:   "rate, count",
	MetricRequests: "rate, count",
	MetricSUTCPU:   "max, avg",
	MetricSUTMem:   "max, avg",
	MetricChecks:   "rate",
	MetricDropped:  "count, rate",
	MetricLate:     "count, rate",
	MetricAchieved: "value",
}

const metricList = "http_req_duration, http_req_failed, http_requests, checks, sut_cpu, sut_mem, dropped, late or achieved_ratio"

// didYouMean is "; did you mean NAME?" for the metric closest to a
// misspelt one, or "". It names a known metric, never the text written.
func didYouMean(metric string) string {
	names := []string{MetricDuration, MetricFailed, MetricRequests, MetricChecks, MetricSUTCPU, MetricSUTMem, MetricRPS, MetricDropped, MetricLate, MetricAchieved}
	if c := suggest.Closest(metric, names, strings.ToLower); c != "" {
		return "; did you mean " + c + "?"
	}
	return ""
}

// parser walks one threshold text and reports errors with a column.
type parser struct {
	src string
	pos int
}

func (p *parser) errorf(at int, format string, args ...any) error {
	col := utf8.RuneCountInString(p.src[:at]) + 1
	return fmt.Errorf("threshold %q: column %d: %s", p.src, col, fmt.Sprintf(format, args...))
}

func (p *parser) rest() string { return p.src[p.pos:] }

func (p *parser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// ident reads letters, digits, '_' and the extra bytes in extra.
func (p *parser) ident(extra string) string {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0 {
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos]
}

// describe quotes what the parser found at its position, for errors; see
// [fragment].
func (p *parser) describe() string {
	r := p.rest()
	if r == "" {
		return "the end of the text"
	}
	return fragment(r)
}

// maxFragment is the most characters of a part of a threshold that an
// error quotes.
const maxFragment = 3

// fragment quotes s, a part of a threshold, for an error: whole when it has
// at most maxFragment characters, else its first maxFragment characters
// and "…". Errors quote the threshold whole, as written (a masker that
// hides a secret hides it there too), and point into it by column; they
// quote no longer part of it, which could be the start or the end of a
// secret the threshold holds, and which no masker would recognise.
func fragment(s string) string {
	if utf8.RuneCountInString(s) <= maxFragment {
		return strconv.Quote(s)
	}
	n := 0
	for range maxFragment {
		_, size := utf8.DecodeRuneInString(s[n:])
		n += size
	}
	return strconv.Quote(s[:n]) + "…"
}

// Parse parses one threshold, such as "http_req_duration:p99 < 300ms".
// The error names the threshold text, the column where parsing failed, and
// what was expected there.
func Parse(s string) (Threshold, error) {
	if t, ok, err := parseRPSAlias(s); ok {
		return t, err
	}
	p := &parser{src: strings.TrimSpace(s)}
	if p.src == "" {
		return Threshold{}, errors.New("threshold is empty: want metric:aggregate op value, e.g. http_req_duration:p99 < 300ms")
	}
	t := Threshold{Source: p.src}
	if err := p.metric(&t); err != nil {
		return Threshold{}, err
	}
	if err := p.target(&t); err != nil {
		return Threshold{}, err
	}
	if err := p.aggregate(&t); err != nil {
		return Threshold{}, err
	}
	if err := p.operator(&t); err != nil {
		return Threshold{}, err
	}
	if err := p.bound(&t); err != nil {
		return Threshold{}, err
	}
	return t, nil
}

// isSUT reports whether t checks the system under test (sut_cpu, sut_mem).
func (t Threshold) isSUT() bool { return t.Metric == MetricSUTCPU || t.Metric == MetricSUTMem }

// metric reads the metric name into t.
func (p *parser) metric(t *Threshold) error {
	at := p.pos
	t.Metric = p.ident("")
	if _, ok := metricAggregates[t.Metric]; !ok {
		if t.Metric == "" {
			return p.errorf(at, "want a metric name (%s), got %s", metricList, p.describe())
		}
		return p.errorf(at, "unknown metric: want %s%s", metricList, didYouMean(t.Metric))
	}
	if t.Metric == MetricChecks && strings.HasPrefix(p.rest(), "{") {
		return p.errorf(p.pos, "checks takes no selector (the summary lists each check by name): write checks:rate > 99%%")
	}
	return nil
}

// target reads the optional selector into t: {endpoint:NAME},
// {phase:NAME} or both, comma-separated ({endpoint:a,phase:b}), or for
// sut_* {service:NAME}.
func (p *parser) target(t *Threshold) error {
	if !strings.HasPrefix(p.rest(), "{") {
		return nil
	}
	if t.isSUT() {
		sel, err := p.selector("service")
		if err != nil {
			return err
		}
		t.Service = sel
		return nil
	}
	at := p.pos
	if err := p.selectors(t); err != nil {
		return err
	}
	if t.Endpoint != "" && !perEndpoint(t.Metric) {
		return p.errorf(at, "%s is measured over the whole run, not per endpoint: remove the {endpoint:…} selector", t.Metric)
	}
	return nil
}

// aggregate reads ':' and the metric's aggregate, normalised, into t.
func (p *parser) aggregate(t *Threshold) error {
	if t.Metric == MetricAchieved && !strings.HasPrefix(p.rest(), ":") {
		t.Aggregate = "value" // its only aggregate: "achieved_ratio >= 99%"
		return nil
	}
	if !strings.HasPrefix(p.rest(), ":") {
		return p.errorf(p.pos, "want ':' and an aggregate after the metric (e.g. %s:p99), got %s", t.Metric, p.describe())
	}
	p.pos++
	at := p.pos
	agg := p.ident(".()")
	norm, ok := normaliseAggregate(t.Metric, agg)
	if !ok {
		if agg == "" {
			return p.errorf(at, "want an aggregate of %s (%s), got %s", t.Metric, metricAggregates[t.Metric], p.describe())
		}
		return p.errorf(at, "this aggregate is not valid for %s: want %s", t.Metric, metricAggregates[t.Metric])
	}
	t.Aggregate = norm
	return nil
}

// operator reads the comparison operator into t.
func (p *parser) operator(t *Threshold) error {
	p.skipSpace()
	at := p.pos
	for _, op := range []string{OpLessEqual, OpGreaterEqual, OpEqual, OpNotEqual, OpLess, OpGreater} {
		if strings.HasPrefix(p.rest(), op) {
			t.Op = op
			p.pos += len(op)
			break
		}
	}
	if t.Op == "" {
		if strings.HasPrefix(p.rest(), "=") {
			return p.errorf(at, "want a comparison operator; write == for equality, not =")
		}
		return p.errorf(at, "want a comparison operator (<, <=, >, >=, == or !=), got %s", p.describe())
	}
	return nil
}

// bound reads the value and unit, or a baseline, into t.
func (p *parser) bound(t *Threshold) error {
	p.skipSpace()
	if ok, err := p.baseline(t); ok || err != nil {
		return err
	}
	if t.isSUT() {
		return p.sutValue(t)
	}
	v, err := p.value(t.kind())
	if err != nil {
		return err
	}
	t.Value = v
	return nil
}

// selector parses `{key:name}` (also `{key="name"}`), where key is
// endpoint, or service for the sut_* metrics.
func (p *parser) selector(want string) (string, error) {
	open := p.pos
	end := strings.IndexByte(p.rest(), '}')
	if end < 0 {
		return "", p.errorf(open, "%s selector is not closed: want {%s:NAME}", want, want)
	}
	inner := p.src[open+1 : open+end]
	p.pos = open + end + 1
	key, val, ok := strings.Cut(inner, ":")
	if !ok {
		key, val, ok = strings.Cut(inner, "=")
	}
	if !ok || strings.TrimSpace(key) != want {
		return "", p.errorf(open, "want {%s:NAME} to select %s", want, map[string]string{"endpoint": "an endpoint", "service": "a service"}[want])
	}
	val = strings.TrimSpace(val)
	if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
		val = val[1 : len(val)-1]
	}
	if val == "" {
		if want == "service" {
			return "", p.errorf(open, "service name is empty: want {service:NAME} with an id from the job's services:")
		}
		return "", p.errorf(open, "endpoint name is empty: want {endpoint:NAME} with the name from endpoints[].name")
	}
	return val, nil
}

func normaliseAggregate(metric, agg string) (string, bool) {
	switch metric {
	case MetricChecks:
		return agg, agg == "rate"
	case MetricSUTCPU, MetricSUTMem:
		switch agg {
		case "max":
			return agg, true
		case "avg", "mean":
			return "avg", true
		}
		return "", false
	case MetricDuration:
		switch agg {
		case "avg", "mean":
			return "avg", true
		case "min", "max":
			return agg, true
		}
		if strings.HasPrefix(agg, "p(") && strings.HasSuffix(agg, ")") {
			agg = "p" + agg[2:len(agg)-1]
		}
		if _, ok := parsePercentile(agg); ok {
			return agg, true
		}
		return "", false
	case MetricAchieved:
		return agg, agg == "value"
	default:
		if agg == "rate" || agg == "count" {
			return agg, true
		}
		return "", false
	}
}

func parsePercentile(agg string) (float64, bool) {
	if len(agg) < 2 || agg[0] != 'p' {
		return 0, false
	}
	num := agg[1:]
	for i := 0; i < len(num); i++ {
		if c := num[i]; c != '.' && (c < '0' || c > '9') {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || v > 100 {
		return 0, false
	}
	return v, true
}

// number scans the decimal number at the cursor ([number.Scan]) and moves
// past it; "" when there is none.
func (p *parser) number() string {
	n := number.Scan(p.src[p.pos:])
	p.pos += n
	return p.src[p.pos-n : p.pos]
}

var wantValue = map[kind]string{
	kindDuration: "a duration such as 300ms, 0.5s or 250 (milliseconds)",
	kindRatio:    "a failure rate such as 1% or 0.01",
	kindCount:    "a whole number such as 10",
	kindRPS:      "a rate in requests per second such as 450",
	kindAchieved: "a share of the asked rate such as 99% or 0.99",
}

func (p *parser) value(k kind) (float64, error) {
	at := p.pos
	num := p.number()
	if num == "" {
		return 0, p.errorf(at, "want %s, got %s", wantValue[k], p.describe())
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, p.errorf(at, "the value is out of range: want %s", wantValue[k])
	}
	if v < 0 {
		return 0, p.errorf(at, "the value is negative: want %s", wantValue[k])
	}
	p.skipSpace()
	unitAt := p.pos
	unit := strings.TrimSpace(p.rest())
	p.pos = len(p.src)

	switch k {
	case kindAchieved:
		return p.achievedValue(at, unitAt, unit, v)
	case kindDuration:
		scale, ok := durationUnits[unit]
		if !ok {
			return 0, p.errorf(unitAt, "unknown duration unit %s: want ms, s, us, µs or ns (a plain number is milliseconds)", fragment(unit))
		}
		return v * scale, nil
	case kindRatio:
		switch unit {
		case "%":
			if v > 100 {
				return 0, p.errorf(at, "the failure rate is above 100%%: want a percentage in 0-100%%")
			}
			return v / 100, nil
		case "":
			// A plain fraction below 1 is Crankfire's spelling (0.01 is
			// 1%); a plain 1 or more is a percentage missing its % sign
			// (or a bound of 100%, which never fails), so it is refused.
			if v >= 1 {
				return 0, p.errorf(at, "the failure rate has no unit, and a plain number of 1 or more is not a fraction: %s", rateFix(num, v))
			}
			return v, nil
		default:
			return 0, p.errorf(unitAt, "unknown unit %s for a failure rate: want %% (1%%) or a plain fraction (0.01)", fragment(unit))
		}
	case kindCount:
		if unit != "" {
			return 0, p.errorf(unitAt, "a count takes no unit, got %s: want %s", fragment(unit), wantValue[k])
		}
		if v != math.Trunc(v) {
			return 0, p.errorf(at, "the count is not a whole number: want %s", wantValue[k])
		}
		return v, nil
	default: // kindRPS
		switch unit {
		case "", "/s", "rps", "req/s":
			return v, nil
		default:
			return 0, p.errorf(unitAt, "unknown unit %s for a request rate: want a plain number of requests per second (or /s, rps)", fragment(unit))
		}
	}
}

// rateFix is the fix for a failure rate written as a plain number v >= 1:
// "write 1% or 0.01". It repeats the number only when it has at most
// maxFragment characters, as errors quote no longer part of a threshold.
func rateFix(num string, v float64) string {
	if utf8.RuneCountInString(num) > maxFragment {
		return "write a percentage with % (1%) or a fraction below 1 (0.01)"
	}
	return "write " + formatNumber(v) + "% or " + formatNumber(v/100)
}

// sutValue reads the value of a sut_cpu or sut_mem threshold: a
// percentage of the target's limit, or cores (sut_cpu) or a size
// (sut_mem), and sets t.Value and t.Unit.
func (p *parser) sutValue(t *Threshold) error {
	want := "a percentage of the CPU limit such as 80%, or cores such as 1.5 or 1.5cores"
	if t.Metric == MetricSUTMem {
		want = "a size such as 512MB or 1GiB, or a percentage of the memory limit such as 90%"
	}
	at := p.pos
	num := p.number()
	if num == "" {
		return p.errorf(at, "want %s, got %s", want, p.describe())
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
		return p.errorf(at, "the value is out of range: want %s", want)
	}
	p.skipSpace()
	unitAt := p.pos
	unit := strings.TrimSpace(p.rest())
	p.pos = len(p.src)
	if unit == "%" {
		t.Unit, t.Value = "%", v/100
		return nil
	}
	if t.Metric == MetricSUTCPU {
		switch strings.ToLower(unit) {
		case "", "core", "cores":
			t.Unit, t.Value, t.BareCores = "cores", v, unit == ""
			return nil
		}
		return p.errorf(unitAt, "unknown unit %s for CPU: want %%, cores, or a plain number of cores", fragment(unit))
	}
	scale, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		return p.errorf(unitAt, "unknown unit %s for memory: want B, KB, MB, GB (powers of 1024, as docker's --memory; KiB, MiB, GiB too) or %%", fragment(unit))
	}
	t.Unit, t.Value = "bytes", v*scale
	return nil
}

// byteUnits are powers of 1024 whether written MB or MiB, as docker reads
// --memory, so that a limit and a threshold written alike agree.
var byteUnits = map[string]float64{
	"b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

var durationUnits = map[string]float64{
	"":   1e-3,
	"ms": 1e-3,
	"s":  1,
	"us": 1e-6,
	"µs": 1e-6, // U+00B5 micro sign
	"μs": 1e-6, // U+03BC Greek mu
	"ns": 1e-9,
}

// StripComment returns line without its comment: a '#' at the start of
// the line or after a space or tab starts one, which runs to the end of the
// line (as in YAML). A '#' inside a word (a value such as "p4ss#w0rd" that
// a secret put there) is text: cutting there would leave the start of the
// secret, which no masker recognises, in the threshold errors quote.
func StripComment(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			return line[:i]
		}
	}
	return line
}

// ParseAll parses a list of thresholds. Each element may itself be a
// multi-line block, as a workflow step passes `thresholds: |`: it is split
// on newlines, blank lines are skipped, and [StripComment] drops comments. The error joins one error per bad threshold, each
// naming its text; the returned slice is nil when any threshold is bad.
func ParseAll(lines []string) ([]Threshold, error) {
	var (
		out  []Threshold
		errs []error
	)
	for _, block := range lines {
		for line := range strings.SplitSeq(block, "\n") {
			line = strings.TrimSpace(StripComment(line))
			if line == "" {
				continue
			}
			t, err := Parse(line)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, t)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
