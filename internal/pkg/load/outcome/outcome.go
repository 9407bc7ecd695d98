package outcome

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/build"
	"github.com/forgeload/forgeload/internal/pkg/load/compare"
	"github.com/forgeload/forgeload/internal/pkg/load/duet"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
	"github.com/forgeload/forgeload/internal/pkg/load/resultview"
	"github.com/forgeload/forgeload/internal/pkg/load/threshold"
)

// Input is what [New] judges: the measurements and what the caller knows
// about how the run ended.
type Input struct {
	// Result is the engine's measurements: one host's, or the merged
	// result of a multi-host run.
	Result *load.Result
	// Thresholds are the test's thresholds. Baseline is the earlier run
	// the baseline thresholds compare with; nil skips them.
	Thresholds []threshold.Threshold
	Baseline   *compare.Result
	// SUT, if not nil, is the resource use of the system under test
	// measured beside the run (a multi-host run's coordinator samples the
	// job's services itself); it replaces Result.SUT before the thresholds
	// are evaluated.
	SUT []load.ResourceSummary
	// Info says where the run came from, for the reports.
	Info *summary.RunInfo
	// Stopped is why the run stopped before its end on its own (a target
	// refused at dial time, feeder rows ran out, …); nil if it did not.
	Stopped error
	// Cancelled is set when the caller's context ended (the job was
	// cancelled, Ctrl-C). A Result marked Interrupted counts as cancelled
	// too.
	Cancelled bool
	// Shortfall is why a multi-host run delivered materially less than it
	// planned; "" if it did not.
	Shortfall string
	// Duet is the verdict of a paired A/B run (baseline_target), nil for
	// any other run: a regression or a run too short to judge fails it.
	Duet *duet.Verdict
	// Where qualifies the data in the verdict's reasons, e.g. " on the
	// merged result".
	Where string
	// ValidityWarn (the config's `validity: warn`) turns an invalid run
	// (one that did not deliver the load asked for, [load.Result.Validity])
	// into warnings instead of a failure.
	ValidityWarn bool
}

// Outcome is a load test's outcome, built once by [New].
type Outcome struct {
	// Result is the engine's measurements.
	Result *load.Result
	// Summary is the reported view of Result, computed once; its
	// Thresholds are Checks and its Run is Info.
	Summary summary.Summary
	// Checks are the thresholds, evaluated once (baseline and SUT
	// included).
	Checks []load.Check
	// Baseline is the earlier run compared with, or nil.
	Baseline *compare.Result
	// Info says where the run came from; may be nil.
	Info *summary.RunInfo
	// Duet is the paired A/B verdict, or nil.
	Duet *duet.Verdict
	// Verdict is whether the run passed and, if not, why.
	Verdict Verdict
	// Regression is set when the run failed only on thresholds that
	// compare with the baseline (nothing else failed, stopped or fell
	// short): the failure a confirming rerun may overturn.
	Regression bool
}

// summarize is summary.Of; a variable so that a test can count the
// calls.
var summarize = summary.Of

// New evaluates in's thresholds on its result once, summarises it once
// and gives the verdict.
func New(in Input) *Outcome {
	res := in.Result
	if in.SUT != nil {
		res.SUT = in.SUT
	}
	o := &Outcome{Result: res, Baseline: in.Baseline, Info: in.Info, Duet: in.Duet}
	var base threshold.Source
	if in.Baseline != nil {
		base = in.Baseline
	}
	o.Checks = build.EvaluateBaseline(in.Thresholds, res, base)
	o.Summary = summarize(res, o.Checks)
	o.Summary.Run = in.Info
	if ab := aborted(in); ab != nil {
		o.Summary.Aborted = ab.Error()
	}
	o.Verdict = judge(in, res, o.Checks)
	o.Regression = regression(in, o.Checks, o.Verdict)
	return o
}

// Kind is the kind of a [Verdict].
type Kind int

const (
	// Pass: every threshold passed and the run measured something.
	Pass Kind = iota
	// Fail: the run stopped on its own, a threshold failed, a multi-host
	// run delivered too little, or no request succeeded.
	Fail
	// Cancelled: the caller cancelled the run before its end; its
	// thresholds are not judged on the partial data.
	Cancelled
	// Invalid: the run did not deliver the load it was asked for
	// (dropped arrivals, an achieved rate under 99% of the asked one, a
	// full worker pool, a generator behind its schedule), so its numbers
	// do not describe that load. It fails like Fail.
	Invalid
)

// Fails reports whether a verdict of kind k fails the step or the
// command (Fail and Invalid).
func (k Kind) Fails() bool { return k == Fail || k == Invalid }

func (k Kind) String() string {
	switch k {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	case Cancelled:
		return "cancelled"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Verdict is whether a run passed. Its order, the same for every caller
// (docs/load.md, "Verdict"), is: aborted by an abort_on_fail threshold
// (fail), stopped on its own (fail), cancelled, invalid (the load asked
// for was not delivered; a warning with `validity: warn`), failed
// thresholds (fail), a multi-host shortfall (fail), a paired A/B
// regression or a paired run too short to judge (fail), nothing measured
// (fail), else pass. The first that applies gives the Kind; Reasons lists
// every failure that applies after a stop or a cancel is ruled out, in
// that order.
type Verdict struct {
	Kind Kind
	// Reasons say why the run did not pass, most important first; empty
	// on a pass.
	Reasons []string
	// Warnings say why the run would have been invalid, under
	// `validity: warn`.
	Warnings []string
	// Failed are the thresholds that failed.
	Failed []load.Check
}

// Err is the verdict as an error: nil on a pass, else its first reason.
func (v Verdict) Err() error {
	if len(v.Reasons) == 0 {
		return nil
	}
	return errors.New(v.Reasons[0])
}

// judge gives the verdict in the one order of [Verdict].
func judge(in Input, res *load.Result, checks []load.Check) Verdict {
	var v Verdict
	for _, c := range checks {
		if !c.Passed {
			v.Failed = append(v.Failed, c)
		}
	}
	if ab := aborted(in); ab != nil {
		return Verdict{Kind: Fail, Reasons: []string{ab.Error()}, Failed: v.Failed}
	}
	switch {
	case in.Stopped != nil:
		return Verdict{Kind: Fail, Reasons: []string{fmt.Sprintf("load test stopped: %v", in.Stopped)}, Failed: v.Failed}
	case in.Cancelled || res.Interrupted:
		return Verdict{Kind: Cancelled, Reasons: []string{"load test interrupted before its end"}, Failed: v.Failed}
	}
	for _, x := range res.Invalid {
		r := fmt.Sprintf("INVALID%s: %s", in.Where, x.Detail)
		if in.ValidityWarn {
			v.Warnings = append(v.Warnings, r+" (validity: warn, so the run is judged on its thresholds)")
		} else {
			v.Reasons = append(v.Reasons, r)
		}
	}
	invalid := len(v.Reasons) > 0
	if len(v.Failed) > 0 {
		var names []string
		for _, c := range v.Failed {
			names = append(names, fmt.Sprintf("%s (got %s)", c.Name, c.Actual))
		}
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d of %d thresholds failed%s: %s", len(v.Failed), len(checks), in.Where, strings.Join(names, "; ")))
	}
	if in.Shortfall != "" {
		v.Reasons = append(v.Reasons, in.Shortfall)
	}
	if in.Duet != nil {
		if err := in.Duet.Err(); err != nil {
			v.Reasons = append(v.Reasons, err.Error())
		}
	}
	if len(v.Reasons) == 0 && res.MeasuredNothing() {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%s (%d of %d requests failed%s)", build.NothingMeasured, res.Errors, res.Requests, in.Where))
	}
	switch {
	case invalid:
		v.Kind = Invalid
	case len(v.Reasons) > 0:
		v.Kind = Fail
	}
	return v
}

// WriteText writes the summary as an aligned plain-text table, and a
// paired run's verdict.
func (o *Outcome) WriteText(w io.Writer) error {
	if err := o.Summary.WriteText(w); err != nil || o.Duet == nil {
		return err
	}
	return o.Duet.WriteText(w)
}

// WriteMarkdown writes the summary as GitHub-flavoured Markdown, and a
// paired run's verdict.
func (o *Outcome) WriteMarkdown(w io.Writer) error {
	if err := o.Summary.WriteMarkdown(w); err != nil || o.Duet == nil {
		return err
	}
	return o.Duet.WriteMarkdown(w)
}

// WriteJSON writes the summary as indented JSON (the result file that
// `forgeload compare` and a later run's baseline read); a paired run's
// verdict is its "duet" field, last.
func (o *Outcome) WriteJSON(w io.Writer) error {
	if o.Duet == nil {
		return o.Summary.WriteJSON(w)
	}
	var b bytes.Buffer
	if err := o.Summary.WriteJSON(&b); err != nil {
		return err
	}
	head := bytes.TrimRight(b.Bytes(), " \n")
	if !bytes.HasSuffix(head, []byte("}")) {
		return errors.New("write JSON result: the summary is not a JSON object")
	}
	d, err := json.MarshalIndent(o.Duet.JSON(), "  ", "  ")
	if err != nil {
		return fmt.Errorf("write JSON result: %w", err)
	}
	out := append(append(append([]byte(nil), head[:len(head)-1]...), ",\n  \"duet\": "...), d...)
	out = append(out, "\n}\n"...)
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("write JSON result: %w", err)
	}
	return nil
}

// WriteHTML writes the self-contained HTML report, with the comparison
// with the baseline when there is one.
func (o *Outcome) WriteHTML(w io.Writer) error {
	v := resultview.BuildSummary(o.Result, &o.Summary)
	v.SetBaseline(o.baselineView())
	return v.Render(w)
}

// Deltas compares the run with its baseline; nil without one.
func (o *Outcome) Deltas() []compare.Delta {
	if o.Baseline == nil {
		return nil
	}
	return compare.Compare(o.Baseline, compare.FromSummary(o.Result, &o.Summary, "this run"), nil)
}

// Writer is one of an Outcome's writers, as a method value's type.
type Writer func(o *Outcome, w io.Writer) error

// The writers, for callers that pick one.
var (
	Text     Writer = (*Outcome).WriteText
	Markdown Writer = (*Outcome).WriteMarkdown
	JSON     Writer = (*Outcome).WriteJSON
	HTML     Writer = (*Outcome).WriteHTML
)

// aborted is the abort_on_fail breach that stopped the run, or nil.
func aborted(in Input) *build.Abort {
	var ab *build.Abort
	if errors.As(in.Stopped, &ab) {
		return ab
	}
	return nil
}
