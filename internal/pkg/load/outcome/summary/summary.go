package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// Latency is a latency summary in milliseconds.
type Latency struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p99_9_ms"`
	Max  float64 `json:"max_ms"`
	Min  float64 `json:"min_ms"`
	Mean float64 `json:"mean_ms"`
}

func latencyOf(s *load.Stats) Latency {
	if s.Latency == nil || s.Latency.Count() == 0 {
		return Latency{}
	}
	h := s.Latency
	return Latency{
		P50: ms(h.Quantile(0.50)), P90: ms(h.Quantile(0.90)), P95: ms(h.Quantile(0.95)),
		P99: ms(h.Quantile(0.99)), P999: ms(h.Quantile(0.999)),
		Max: ms(h.Max()), Min: ms(h.Min()), Mean: ms(h.Mean()),
	}
}

// EndpointSummary is one endpoint's row of a [Summary].
type EndpointSummary struct {
	Name      string           `json:"name"`
	Requests  int64            `json:"requests"`
	Errors    int64            `json:"errors"`
	ErrorRate float64          `json:"error_rate"`
	RPS       float64          `json:"rps"`
	Latency   Latency          `json:"latency"`
	Status    map[string]int64 `json:"status,omitempty"`
}

// SecondSummary is one row of the per-second series of a [Summary].
type SecondSummary struct {
	Second    int              `json:"second"`
	Requests  int64            `json:"requests"`
	Errors    int64            `json:"errors"`
	Dropped   int64            `json:"dropped"`
	DroppedBy map[string]int64 `json:"dropped_by,omitempty"`
	Late      int64            `json:"late"`
	// GeneratorLate and GeneratorLateMaxMS are the second's evidence of
	// the generator falling behind (see [Snapshot]).
	GeneratorLate      int64            `json:"generator_late,omitempty"`
	GeneratorLateMaxMS float64          `json:"generator_late_max_ms,omitempty"`
	InFlight           int              `json:"in_flight"`
	TargetRPS          float64          `json:"target_rps,omitempty"`
	P50                float64          `json:"p50_ms"`
	P90                float64          `json:"p90_ms"`
	P95                float64          `json:"p95_ms"`
	P99                float64          `json:"p99_ms"`
	P999               float64          `json:"p99_9_ms"`
	Status             map[string]int64 `json:"status,omitempty"`
	ErrorClasses       map[string]int64 `json:"error_classes,omitempty"`
}

// SchemaVersion is the version of the [Summary] JSON layout, written
// as schema_version. Version 1 (no schema_version field) had no per-second
// p99.9, late, status or error classes, no latency_hist and no run info.
const SchemaVersion = 2

// Summary is the reported view of a [load.Result]: what the text, JSON and
// Markdown summaries show, and what the forge step outputs are read from.
type Summary struct {
	SchemaVersion  int              `json:"schema_version"`
	ElapsedSeconds float64          `json:"elapsed_s"`
	Model          string           `json:"model"`
	Requests       int64            `json:"requests"`
	Errors         int64            `json:"errors"`
	ErrorRate      float64          `json:"error_rate"`
	RPS            float64          `json:"rps"`
	TargetRPS      float64          `json:"target_rps,omitempty"`
	Latency        Latency          `json:"latency"`
	Status         map[string]int64 `json:"status,omitempty"`
	ErrorClasses   map[string]int64 `json:"error_classes,omitempty"`
	BytesIn        int64            `json:"bytes_in"`
	BytesOut       int64            `json:"bytes_out"`
	Retries        int64            `json:"retries"`
	Dropped        int64            `json:"dropped"`
	DroppedBy      map[string]int64 `json:"dropped_by,omitempty"`
	Late           int64            `json:"late"`
	Queued         int64            `json:"queued"`
	// AchievedRatio is the achieved rate over the asked one (open model).
	AchievedRatio float64 `json:"achieved_ratio,omitempty"`
	// Workers and MaxWorkers are the open model's peak and cap of workers.
	Workers    int `json:"workers,omitempty"`
	MaxWorkers int `json:"max_workers,omitempty"`
	// GeneratorLate, GeneratorLateMaxMS and GeneratorBehindSeconds are the
	// evidence of the generator falling behind ([load.GeneratorBehind]).
	GeneratorLate          int64   `json:"generator_late,omitempty"`
	GeneratorLateMaxMS     float64 `json:"generator_late_max_ms,omitempty"`
	GeneratorBehindSeconds []int   `json:"generator_behind_seconds,omitempty"`
	GeneratorBound         bool    `json:"generator_bound"`
	WorkerBound            bool    `json:"worker_bound"`
	// Valid is false when the run did not deliver the load it was asked
	// for; Invalid says why (see [load.Result.Validity]).
	Valid       bool              `json:"valid"`
	Invalid     []load.Invalidity `json:"invalid,omitempty"`
	Stalled     int64             `json:"stalled,omitempty"`
	Interrupted bool              `json:"interrupted"`
	// Unreported is a multi-host run's lost hosts' traffic counted
	// without metrics, with its bound; see [load.Unreported].
	Unreported       *load.Unreported  `json:"unreported,omitempty"`
	Endpoints        []EndpointSummary `json:"endpoints"`
	Seconds          []SecondSummary   `json:"seconds"`
	Thresholds       []load.Check      `json:"thresholds,omitempty"`
	ThresholdsPassed bool              `json:"thresholds_passed"`
	Protocol         *ProtocolSummary  `json:"protocol,omitempty"`
	// Protocols are a mixed-protocol run's protocols, one entry each (see
	// [Result.Protocols]); absent otherwise.
	Protocols []*ProtocolSummary `json:"protocols,omitempty"`
	// Checks are the response checks (the config's checks:), each with
	// its counts; absent without checks.
	Checks *ChecksSummary `json:"checks,omitempty"`
	// CrankfireFields repeat the totals under Crankfire's JSON names.
	CrankfireFields
	// LatencyHist is the overall latency histogram in HDR V2 compressed
	// encoding (base64 in JSON), so that any percentile and its noise can
	// be computed later, for example by `forgeload compare`.
	LatencyHist []byte `json:"latency_hist,omitempty"`
	// Run says where the run came from.
	Run *RunInfo `json:"run,omitempty"`
	// SUT is the resource use of each system under test (the job's
	// service containers) during the run; absent when none was measured.
	SUT []load.ResourceSummary `json:"sut,omitempty"`
	// Phases are the named phases' rows; absent without phases.
	Phases []PhaseSummary `json:"phases,omitempty"`
	// Aborted says which abort_on_fail threshold stopped the run, and
	// when ("aborted: http_req_failed:rate < 1% at 2s (got 100.00%)");
	// "" when none did. The verdict (package outcome) sets it.
	Aborted string `json:"aborted,omitempty"`

	// ErrorMessages are the TopErrorMessages most frequent error
	// messages, each with its endpoint and count, most frequent first;
	// ErrorMessagesOther counts the failures of every other message.
	ErrorMessages      []MessageCount `json:"error_messages,omitempty"`
	ErrorMessagesOther int64          `json:"error_messages_other,omitempty"`
}

// Of builds the reported view of r and its threshold checks.
func Of(r *load.Result, checks []load.Check) Summary {
	s := Summary{
		SchemaVersion:  SchemaVersion,
		ElapsedSeconds: r.Elapsed.Seconds(),
		Model:          "closed",
		Requests:       r.Requests,
		Errors:         r.Errors,
		ErrorRate:      r.ErrorRate(),
		RPS:            r.RPS(),
		TargetRPS:      r.TargetRPS,
		Latency:        latencyOf(&r.Stats),
		Status:         statusNames(r.Status),
		ErrorClasses:   r.Classes,
		BytesIn:        r.BytesIn,
		BytesOut:       r.BytesOut,
		Retries:        r.Retries,
		Dropped:        r.Dropped,
		DroppedBy:      r.DroppedBy,
		Late:           r.Late,
		Queued:         r.Queued,
		Stalled:        r.Stalled,
		GeneratorBound: r.GeneratorBound,
		WorkerBound:    r.WorkerBound,
		Interrupted:    r.Interrupted,
		Unreported:     r.Unreported,
		Endpoints:      []EndpointSummary{},
		Thresholds:     checks,
		Protocol:       summarizeProtocol(r.Protocol),
		Protocols:      summarizeProtocols(r),
		Checks:         summarizeChecks(r),
		SUT:            r.SUT,
		Phases:         summarizePhases(r),

		ThresholdsPassed: true,
	}
	if r.Open {
		s.Model = "open"
	}
	s.AchievedRatio, _ = r.AchievedRatio()
	s.Workers, s.MaxWorkers = r.Workers, r.MaxWorkers
	b := load.GeneratorBehind(r)
	s.GeneratorLate, s.GeneratorLateMaxMS, s.GeneratorBehindSeconds = b.Late, ms(b.Max), b.Seconds
	s.Invalid = r.Invalid
	s.Valid = len(s.Invalid) == 0 && notJudged(&s) == ""
	s.ErrorMessages, s.ErrorMessagesOther = topMessages(r)
	for i := range r.Endpoints {
		e := &r.Endpoints[i]
		es := EndpointSummary{Name: e.Name, Requests: e.Requests, Errors: e.Errors, ErrorRate: e.ErrorRate(), Latency: latencyOf(&e.Stats), Status: statusNames(e.Status)}
		if r.Elapsed > 0 {
			es.RPS = float64(e.Requests) / r.Elapsed.Seconds()
		}
		s.Endpoints = append(s.Endpoints, es)
	}
	s.Seconds = make([]SecondSummary, 0, len(r.Seconds))
	for _, x := range r.Seconds {
		s.Seconds = append(s.Seconds, SecondSummary{
			Second: x.Second, Requests: x.Requests, Errors: x.Errors, Dropped: x.Dropped, DroppedBy: x.DroppedBy, Late: x.Late,
			GeneratorLate: x.GeneratorLate, GeneratorLateMaxMS: ms(x.GeneratorLateMax),
			InFlight: x.InFlight, TargetRPS: x.TargetRPS,
			P50: ms(x.P50), P90: ms(x.P90), P95: ms(x.P95), P99: ms(x.P99), P999: ms(x.P999),
			Status: statusNames(x.Status), ErrorClasses: x.Classes,
		})
	}
	if r.Latency != nil && r.Latency.Count() > 0 {
		s.LatencyHist, _ = r.Latency.Encode() // encoding an in-range histogram does not fail
	}
	for _, c := range checks {
		s.ThresholdsPassed = s.ThresholdsPassed && c.Passed
	}
	s.CrankfireFields = crankfireOf(&s)
	return s
}

func statusNames(m map[int]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[strconv.Itoa(k)] = v
	}
	return out
}

// WriteJSON writes s as indented JSON.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write json summary: %w", err)
	}
	return nil
}

// summaryRows returns the label/value rows shared by the text and Markdown
// summaries.
func summaryRows(s *Summary) [][2]string {
	rate := strconv.FormatFloat(s.RPS, 'f', 1, 64) + " req/s"
	if s.TargetRPS > 0 {
		rate += " (target " + strconv.FormatFloat(s.TargetRPS, 'f', 1, 64) + ", " +
			strconv.FormatFloat(100*s.RPS/s.TargetRPS, 'f', 1, 64) + "%)"
	}
	duration := strconv.FormatFloat(s.ElapsedSeconds, 'f', 2, 64) + "s, " + s.Model + " model"
	if s.Interrupted {
		duration += ", interrupted"
	}
	l := s.Latency
	late := strconv.FormatInt(s.Dropped, 10) + " / " + strconv.FormatInt(s.Late, 10)
	if s.Queued > 0 {
		late += " (" + strconv.FormatInt(s.Queued, 10) + " of the late waited for a free worker)"
	}
	if len(s.DroppedBy) > 0 {
		late += "; dropped: " + fmtCounts(s.DroppedBy)
	}
	rows := [][2]string{
		{"Validity", ValidityVerdict(s)},
		{"Duration", duration},
		{"Requests", strconv.FormatInt(s.Requests, 10)},
		{"Rate", rate},
		{"Errors", strconv.FormatInt(s.Errors, 10) + " (" + fmtPct(s.ErrorRate) + ")"},
		{"Latency p50 / p90 / p95", fmtMS(l.P50) + " / " + fmtMS(l.P90) + " / " + fmtMS(l.P95)},
		{"Latency p99 / p99.9", fmtMS(l.P99) + " / " + fmtMS(l.P999)},
		{"Latency min / mean / max", fmtMS(l.Min) + " / " + fmtMS(l.Mean) + " / " + fmtMS(l.Max)},
		{"Status codes", fmtCounts(s.Status)},
		{"Error classes", fmtCounts(s.ErrorClasses)},
		{"Bytes in / out", fmtBytes(s.BytesIn) + " / " + fmtBytes(s.BytesOut)},
		{"Retries", strconv.FormatInt(s.Retries, 10)},
		{"Dropped / late arrivals", late},
	}
	if u := unreportedRow(s.Unreported); u != "" {
		rows = append(rows, [2]string{"Unreported (lost hosts)", u})
	}
	if s.MaxWorkers > 0 {
		rows = append(rows, [2]string{"Workers (peak / max)", strconv.Itoa(s.Workers) + " / " + strconv.Itoa(s.MaxWorkers)})
	}
	rows = append(rows, [][2]string{
		{"Generator-bound", GeneratorVerdict(s)},
		{"Worker-bound", WorkerVerdict(s)},
	}...)
	for _, u := range s.SUT {
		sampled := strconv.Itoa(u.Samples) + " readings"
		if u.Samples == 1 {
			sampled = "1 reading"
		}
		if u.SampledSeconds > 0 {
			sampled += " covering " + strconv.FormatFloat(u.SampledSeconds, 'f', 1, 64) + " s of the run's " +
				strconv.FormatFloat(s.ElapsedSeconds, 'f', 1, 64) + " s"
		}
		rows = append(rows,
			[2]string{"SUT " + u.Target + " sampled", sampled},
			[2]string{"SUT " + u.Target + " CPU peak / mean", fmtCores(u.CPUCoresMax) + " / " + fmtCores(u.CPUCoresMean) + " cores (" +
				fmtPct(u.CPUPctMax/100) + " / " + fmtPct(u.CPUPctMean/100) + " of " + fmtCores(u.CPULimitCores) + ")"},
			[2]string{"SUT " + u.Target + " memory peak / mean", fmtBytes(int64(u.MemBytesMax)) + " / " + fmtBytes(int64(u.MemBytesMean)) +
				" (limit " + fmtBytes(int64(u.MemLimitBytes)) + ")"},
			[2]string{"SUT " + u.Target + " net in / out, disk read / write", fmtBytes(int64(u.NetRxBytes)) + " / " + fmtBytes(int64(u.NetTxBytes)) + ", " +
				fmtBytes(int64(u.BlockReadBytes)) + " / " + fmtBytes(int64(u.BlockWriteBytes))})
	}
	return rows
}

// GeneratorVerdict says whether the generator itself fell behind, and what
// to do about it: "no", or a sentence starting with "YES".
func GeneratorVerdict(s *Summary) string {
	b := load.Behind{Late: s.GeneratorLate, Max: time.Duration(s.GeneratorLateMaxMS * float64(time.Millisecond)), Seconds: s.GeneratorBehindSeconds}
	if !s.GeneratorBound {
		if b.Late == 0 {
			return "no"
		}
		return "no (" + b.String() + "; it takes " + strconv.Itoa(load.GeneratorBehindSeconds) + " such seconds)"
	}
	if s.Stalled > 0 {
		return "YES: the generator stalled (a frozen process or host, not the target) and skipped " + strconv.FormatInt(s.Stalled, 10) +
			" overdue arrivals, counted as dropped, rather than send them at once in a burst. Look for what froze the runner (a VM pause, swapping, a long GC)"
	}
	return "YES: " + b.String() + ", so latencies include its delay. Lower the rate, or give the runner more CPU (or split the test over more hosts)"
}

// ValidityVerdict says whether the run delivered the load it was asked
// for: "valid", "INVALID: " and the first reason with its fix (and how
// many more there are), or "not judged: " and why for a run that the
// rules of [load.Result.Validity] do not judge but that did not deliver
// all it was asked for (one that stopped early, or a closed-model run
// whose iterations dropped requests, such as a feeder with recycle:
// false running out): such a run is never shown as valid.
func ValidityVerdict(s *Summary) string {
	if len(s.Invalid) == 0 {
		if why := notJudged(s); why != "" {
			return "not judged: " + why
		}
		return "valid"
	}
	v := "INVALID: " + s.Invalid[0].Detail
	if n := len(s.Invalid) - 1; n > 0 {
		var more []string
		for _, x := range s.Invalid[1:] {
			more = append(more, x.Reason)
		}
		v += " (also: " + strings.Join(more, ", ") + ")"
	}
	return v
}

// notJudged says why a run without invalidities still did not deliver
// all it was asked for, so that it is neither shown nor output as valid:
// it stopped before its end, or (closed model, which the validity rules
// do not judge) iterations dropped requests. "" when neither.
func notJudged(s *Summary) string {
	switch {
	case s.Interrupted:
		return "the run stopped before its end, so it did not deliver all it was asked for"
	case s.Model == "closed" && s.Dropped > 0:
		return strconv.FormatInt(s.Dropped, 10) + " iterations never sent a request (" + fmtCounts(s.DroppedBy) + ")"
	}
	return ""
}

// WorkerVerdict says whether every worker was busy, so that the target or
// concurrency limited the test, and what to do about it: "no", or a
// sentence starting with "YES".
func WorkerVerdict(s *Summary) string {
	if !s.WorkerBound {
		return "no"
	}
	return "YES: every worker was busy: " + strconv.FormatInt(s.Queued, 10) + " arrivals waited for a free worker and " +
		strconv.FormatInt(s.Dropped, 10) + " were dropped. The target's latency or max_concurrency limited this test " +
		"(latencies are still measured from the intended send time). Raise max_concurrency if the target should take more requests in flight"
}

func endpointCells(e *EndpointSummary) []string {
	return []string{
		e.Name, strconv.FormatInt(e.Requests, 10), strconv.FormatFloat(e.RPS, 'f', 1, 64),
		fmtPct(e.ErrorRate), fmtMS(e.Latency.P50), fmtMS(e.Latency.P95), fmtMS(e.Latency.P99), fmtMS(e.Latency.Max),
	}
}

var endpointHeader = []string{"Endpoint", "Requests", "RPS", "Errors", "p50", "p95", "p99", "Max"}

// checkResult is PASS, FAIL or SKIP for one check.
func checkResult(c load.Check) string {
	if c.Skipped {
		return "SKIP"
	}
	return passFail(c.Passed)
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// WriteText writes s as an aligned plain-text table, as printed at the
// end of `forgeload load` and in the job log.
func (s *Summary) WriteText(w io.Writer) error {
	checks := s.Thresholds
	ew := &errWriter{w: w}
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Load test summary")
	if s.Aborted != "" {
		fmt.Fprintf(tw, "  %s\n", s.Aborted)
	}
	for _, row := range summaryRows(s) {
		fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
	}
	_ = tw.Flush()
	for _, ps := range s.ProtocolSections() {
		fmt.Fprintf(ew, "\n%s\n", ps.Protocol)
		tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		for _, row := range protocolRows(ps) {
			fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
		}
		_ = tw.Flush()
	}
	writeChecksText(ew, s.Checks)
	writeMessagesText(ew, s)
	if len(s.Endpoints) > 1 {
		fmt.Fprintln(ew, "\nEndpoints")
		tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join(endpointHeader, "\t")+"\t")
		for i := range s.Endpoints {
			fmt.Fprintln(tw, strings.Join(endpointCells(&s.Endpoints[i]), "\t")+"\t")
		}
		_ = tw.Flush()
	}
	writePhasesText(ew, s.Phases)
	if len(checks) > 0 {
		fmt.Fprintf(ew, "\nThresholds: %s\n", passFail(s.ThresholdsPassed))
		tw = tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		for _, c := range checks {
			fmt.Fprintf(tw, "  %s\t%s\tactual %s\n", checkResult(c), c.Name, c.Actual)
		}
		_ = tw.Flush()
	}
	if ew.err != nil {
		return fmt.Errorf("write text summary: %w", ew.err)
	}
	return nil
}

// mdEscape escapes text for a Markdown table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// WriteMarkdown writes s as GitHub-flavoured Markdown, for
// GITHUB_STEP_SUMMARY and the forge's job summary.
func (s *Summary) WriteMarkdown(w io.Writer) error {
	checks := s.Thresholds
	ew := &errWriter{w: w}
	fmt.Fprintln(ew, "### Load test summary")
	fmt.Fprintln(ew)
	if len(checks) > 0 {
		icon := "✅"
		if !s.ThresholdsPassed {
			icon = "❌"
		}
		fmt.Fprintf(ew, "%s Thresholds: **%s**\n\n", icon, passFail(s.ThresholdsPassed))
	}
	if s.Aborted != "" {
		fmt.Fprintf(ew, "⛔ %s\n\n", mdEscape(s.Aborted))
	}
	fmt.Fprintln(ew, "| Metric | Value |")
	fmt.Fprintln(ew, "|---|---|")
	for _, row := range summaryRows(s) {
		fmt.Fprintf(ew, "| %s | %s |\n", mdEscape(row[0]), mdEscape(row[1]))
	}
	for _, ps := range s.ProtocolSections() {
		for _, row := range protocolRows(ps) {
			fmt.Fprintf(ew, "| %s %s | %s |\n", mdEscape(ps.Protocol), mdEscape(row[0]), mdEscape(row[1]))
		}
	}
	writeChecksMarkdown(ew, s.Checks)
	writeMessagesMarkdown(ew, s)
	if len(s.Endpoints) > 1 {
		fmt.Fprintln(ew, "\n#### Endpoints")
		fmt.Fprintln(ew)
		fmt.Fprintln(ew, "| "+strings.Join(endpointHeader, " | ")+" |")
		fmt.Fprintln(ew, "|---"+strings.Repeat("|--:", len(endpointHeader)-1)+"|")
		for i := range s.Endpoints {
			cells := endpointCells(&s.Endpoints[i])
			for j := range cells {
				cells[j] = mdEscape(cells[j])
			}
			fmt.Fprintln(ew, "| "+strings.Join(cells, " | ")+" |")
		}
	}
	writePhasesMarkdown(ew, s.Phases)
	if len(checks) > 0 {
		fmt.Fprintln(ew, "\n#### Thresholds")
		fmt.Fprintln(ew)
		fmt.Fprintln(ew, "| Result | Threshold | Actual |")
		fmt.Fprintln(ew, "|---|---|---|")
		for _, c := range checks {
			fmt.Fprintf(ew, "| %s | `%s` | %s |\n", checkResult(c), strings.ReplaceAll(c.Name, "`", "'"), mdEscape(c.Actual))
		}
	}
	if ew.err != nil {
		return fmt.Errorf("write markdown summary: %w", ew.err)
	}
	return nil
}

// errWriter remembers the first write error so the report code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	_, e.err = e.w.Write(p)
	return len(p), nil
}
