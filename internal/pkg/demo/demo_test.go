package demo

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDemoServes(t *testing.T) {
	t.Parallel()
	s, err := Start(Options{Median: time.Millisecond, ErrorRate: 0.5, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ok, unavailable int
	for i := 0; i < 40; i++ {
		resp, err := http.Get(s.URL() + "/api/items")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
			if !strings.Contains(string(body), "anvil") {
				t.Fatalf("GET /api/items body = %q, want the item list", body)
			}
		case http.StatusServiceUnavailable:
			unavailable++
		default:
			t.Fatalf("GET /api/items = %d", resp.StatusCode)
		}
	}
	// With a 50% error rate over 40 seeded draws, both outcomes appear.
	if ok == 0 || unavailable == 0 {
		t.Fatalf("ok=%d unavailable=%d, want both > 0", ok, unavailable)
	}
	if got := s.requests.Load(); got != 40 {
		t.Fatalf("requests counted = %d, want 40", got)
	}
	if got := s.errors.Load(); got != int64(unavailable) {
		t.Fatalf("errors counted = %d, want %d", got, unavailable)
	}
}

func TestDemoRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	if _, err := Start(Options{Addr: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("Start(0.0.0.0:0) = %v, want a loopback error", err)
	}
}

func TestDemoLatencyDistribution(t *testing.T) {
	t.Parallel()
	s := &Server{o: Options{Median: 10 * time.Millisecond, Sigma: 0.5, ErrorRate: 0.005}}
	s.rng = newRand(3)
	n := 20000
	below := 0
	for i := 0; i < n; i++ {
		d, _ := s.draw()
		if d < 10*time.Millisecond {
			below++
		}
	}
	// The median of the log-normal is Median: about half fall below it.
	if frac := float64(below) / float64(n); frac < 0.47 || frac > 0.53 {
		t.Fatalf("fraction below the median = %.3f, want ~0.5", frac)
	}
}
