package cmd

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/forgetest"
	"github.com/forgeload/forgeload/internal/pkg/report"
)

// TestE2EKeptReportSurvivesRestart: a job whose end fell in a forge outage
// longer than its close timeout leaves its unacknowledged rows and result
// in runner.file's outbox; the real daemon, started later, logs what is
// pending and delivers it once the forge answers, so the task does not stay
// "running". (The job here is run in-process with a 1 s close timeout;
// TestE2EOutageAtJobEndThroughDaemon has the daemon run it.)
func TestE2EKeptReportSurvivesRestart(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "")
	registered(t, f, n, "e2e-outbox")
	reg, err := config.LoadRegistration(n.file)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(client.Options{Address: reg.Address, UUID: reg.UUID, Token: reg.Token})
	if err != nil {
		t.Fatal(err)
	}
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte("on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: echo x\n")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{}))
	if err != nil || resp.Msg.GetTask().GetId() != id {
		t.Fatalf("FetchTask = %v, %v; want task %d", resp, err, id)
	}

	ob, err := report.OpenOutbox(n.file+".pending", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Down()
	rep := report.New(cl, id, 1, report.Options{CloseTimeout: time.Second, Outbox: ob})
	rep.Start(ctx)
	rep.StepStart(0)
	want := []string{"first row", "second row", "last row"}
	for _, l := range want {
		rep.Logf(0, "%s", l)
	}
	rep.StepEnd(0, runnerv1.Result_RESULT_SUCCESS)
	if err := rep.Close(runnerv1.Result_RESULT_SUCCESS); err != nil {
		t.Fatalf("Close during the outage = %v, want nil (kept)", err)
	}
	cl.CloseIdleConnections()
	if v := f.Task(id); v.Done {
		t.Fatalf("the task is done before the forge came back: %+v", v)
	}

	f.Up()
	d := n.startDaemon()
	v := waitDone(t, f, id, d)
	if v.Result != runnerv1.Result_RESULT_SUCCESS || !slices.Equal(v.Log[:len(want)], want) {
		t.Fatalf("task after the restart: %v, log %q", v.Result, v.Log)
	}
	waitFor(t, "the delivery in the daemon log", 30*time.Second, func() bool {
		return strings.Contains(d.out.String(), "delivered the final log and result of task")
	})
	out := d.out.String()
	if !strings.Contains(out, "1 finished tasks wait for the forge") {
		t.Errorf("the daemon did not log what was pending at start:\n%s", out)
	}
	if ents, err := os.ReadDir(n.file + ".pending"); err != nil || len(ents) != 0 {
		t.Errorf("outbox after delivery: %d entries (%v), want none", len(ents), err)
	}
}

// TestE2EOutageAtJobEndThroughDaemon: the real daemon runs a job that logs
// steadily; the forge goes down before the job ends and stays down past the
// reporter's close timeout (runner.final_report_timeout, 2 s here). The
// daemon must say that the final report is kept, keep it in runner.file's
// .pending outbox across a SIGTERM and a restart, and deliver it when the
// forge returns: every row exactly once, in order, and the result.
func TestE2EOutageAtJobEndThroughDaemon(t *testing.T) {
	parallel(t)
	f := forgetest.New(t, forgetest.WithRegistrationToken("reg-token"))
	n := newNode(t, "  final_report_timeout: 2s\n")
	registered(t, f, n, "e2e-outage-end")
	d := n.startDaemon()
	const lines = 60
	id := f.QueueJob(forgetest.Job{RunsOn: []string{"forgeload"}, Payload: []byte(fmt.Sprintf(
		"on: push\njobs:\n  a:\n    runs-on: forgeload\n    steps:\n      - run: for i in $(seq 1 %d); do echo \"row-$i\"; sleep 0.05; done\n", lines))})
	waitFor(t, "the first rows", 30*time.Second, func() bool {
		return slices.Contains(f.Task(id).Log, "row-5")
	})
	f.Down()
	if slices.Contains(f.Task(id).Log, fmt.Sprintf("row-%d", lines)) {
		t.Fatal("the job ended before the outage began; the test proves nothing")
	}
	waitFor(t, "the daemon to say the final report is kept", 60*time.Second, func() bool {
		return strings.Contains(d.out.String(), "they are kept on disk and delivered when it answers")
	})
	if !strings.Contains(d.out.String(), "within 2s; they are kept") {
		t.Errorf("the daemon did not give up after runner.final_report_timeout (2s):\n%s", d.out.String())
	}
	if ents, err := os.ReadDir(n.file + ".pending"); err != nil || len(ents) != 1 {
		t.Fatalf("outbox during the outage: %d entries (%v), want 1; daemon output:\n%s", len(ents), err, d.out.String())
	}
	if v := f.Task(id); v.Done {
		t.Fatalf("the task is done during the outage: %+v", v)
	}
	d.signal(t, syscall.SIGTERM)
	if code := d.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("daemon exit %d after SIGTERM during the outage:\n%s", code, d.out.String())
	}

	d2 := n.startDaemon()
	waitFor(t, "the restarted daemon to wait for the forge", 30*time.Second, func() bool {
		return strings.Contains(d2.out.String(), "did not answer Declare")
	})
	f.Up()
	v := waitDone(t, f, id, d2)
	if v.Result != runnerv1.Result_RESULT_SUCCESS {
		t.Fatalf("result %v after the restart; daemon output:\n%s", v.Result, d2.out.String())
	}
	var rows []string
	for _, r := range v.Log {
		if strings.HasPrefix(r, "row-") {
			rows = append(rows, r)
		}
	}
	if len(rows) != lines {
		t.Fatalf("the forge has %d row lines, want %d:\n%s", len(rows), lines, strings.Join(v.Log, "\n"))
	}
	for i, r := range rows {
		if want := fmt.Sprintf("row-%d", i+1); r != want {
			t.Fatalf("row %d = %q, want %q (gap, duplicate or reorder)", i, r, want)
		}
	}
	waitFor(t, "the delivery in the restarted daemon's log", 30*time.Second, func() bool {
		return strings.Contains(d2.out.String(), "delivered the final log and result of task")
	})
	if out := d2.out.String(); !strings.Contains(out, "1 finished tasks wait for the forge") {
		t.Errorf("the restarted daemon did not log what was pending:\n%s", out)
	}
	if ents, err := os.ReadDir(n.file + ".pending"); err != nil || len(ents) != 0 {
		t.Errorf("outbox after delivery: %d entries (%v), want none", len(ents), err)
	}
}
