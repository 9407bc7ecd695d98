package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSegmentErrorCutBetweenWords: a worker's error longer than the run
// carries is cut between words, so a secret it quotes (a target's path,
// which the job's masker hides whole) is not cut into a prefix no masker
// recognises.
func TestSegmentErrorCutBetweenWords(t *testing.T) {
	gate.Short(t)
	srv, rdb := startRedis(t)
	log := newArrivalLog()
	const secret = "S3cretPathPartThatStraddlesTheCut"
	msg := strings.Repeat("word ", (maxErrLen-30)/5) + "http://127.0.0.1/" + secret + " is denied"
	startPool(t, srv.Addr(), "ok", log.runner("ok"), nil)
	startPool(t, srv.Addr(), "strict", segmentRunnerFunc(func(context.Context, Assignment) error {
		return errors.New(msg)
	}), nil)
	waitRunners(t, rdb, 2)
	_, err := Coordinate(context.Background(), rdb, Run{
		Spec: []byte(`{"rate":20}`), Duration: 3 * time.Second, Workers: 2, JoinTimeout: 5 * time.Second,
	}, CoordOptions{RunID: "cut", StartLead: 200 * time.Millisecond, Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "worker strict could not run segment") {
		t.Fatalf("Coordinate: err = %v, want the refusing worker's error", err)
	}
	if strings.Contains(err.Error(), secret[:4]) || !strings.HasSuffix(err.Error(), "word …") {
		t.Errorf("Coordinate: err = %q, want it cut after the last whole word before the secret", err)
	}
}
