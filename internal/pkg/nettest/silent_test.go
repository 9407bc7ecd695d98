package nettest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// A request to a silent target is accepted and never answered: it ends
// only by its own deadline.
func TestSilentTargetNeverAnswers(t *testing.T) {
	url := SilentTarget(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		res.Body.Close()
		t.Fatalf("got %s, want no answer", res.Status)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the request's deadline (the connection was accepted and left unanswered)", err)
	}
}
