package loadrun

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/guard"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// TestRunSegmentTrapsPanic: a panic in the segment runner, which runs on a
// goroutine of the cluster pool, comes back as an error, logged with its
// stack.
func TestRunSegmentTrapsPanic(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	l := logrus.New()
	l.SetOutput(&logs)
	r := &SegmentRunner{Logger: logrus.NewEntry(l)}
	cfg, err := spec.Parse("x.yaml", []byte("target: http://127.0.0.1:9/\nrate: 10\nduration: 1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	wire, err := EncodeSpec(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A zero segment range has nil bounds: its length panics.
	err = r.RunSegment(context.Background(), cluster.Assignment{Run: "r1", Spec: wire})
	var pe *guard.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("RunSegment(zero range) = %v, want a recovered panic", err)
	}
	if !strings.Contains(logs.String(), "segment 0 panicked") || !strings.Contains(logs.String(), "stack=") {
		t.Fatalf("daemon log lacks the panic and its stack:\n%s", logs.String())
	}
}

// TestRunSegmentRefusesOtherVersion: a worker given the spec of another
// forgeload version sends nothing and says why, so the run fails with
// that reason.
func TestRunSegmentRefusesOtherVersion(t *testing.T) {
	t.Parallel()
	r := &SegmentRunner{}
	err := r.RunSegment(context.Background(), cluster.Assignment{Run: "r1", Spec: []byte(`{"v":1,"name":"x.yaml","config":"cmF0ZTogMQ=="}`)})
	if err == nil || !strings.Contains(err.Error(), "run the same forgeload version on every cluster member") {
		t.Fatalf("RunSegment(v1 spec) = %v, want the version refusal", err)
	}
}
