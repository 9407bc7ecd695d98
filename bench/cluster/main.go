package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/forgeload/forgeload/internal/pkg/cluster"
	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/loadrun"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mainErr(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

const usage = "usage: clusterbench worker -redis URL -id NAME | coord -redis URL -workers N -target URL [-duration D] [-concurrency C] [-rate R] | table < results.jsonl"

func mainErr(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	if args[0] == "table" {
		return table(os.Stdin, stdout)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	redisURL := fs.String("redis", "", "redis:// URL of the pool's Redis")
	id := fs.String("id", "", "worker name (worker mode)")
	workers := fs.Int("workers", 1, "workers to split the test over (coord mode)")
	target := fs.String("target", "", "http://127.0.0.1:PORT/ URL to load (coord mode)")
	duration := fs.Duration("duration", 10*time.Second, "test duration (coord mode)")
	conc := fs.Int("concurrency", 48, "closed loop: users over all workers; with -rate: in flight per worker")
	rate := fs.Float64("rate", 0, "fixed total rate in req/s; 0 runs a closed loop")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w; %s", err, usage)
	}
	opt, err := redis.ParseURL(*redisURL)
	if err != nil {
		return fmt.Errorf("-redis %q: %w", *redisURL, err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	switch args[0] {
	case "worker":
		return worker(ctx, rdb, *id, stderr)
	case "coord":
		u, err := url.Parse(*target)
		if err != nil || u.Hostname() != "127.0.0.1" {
			return fmt.Errorf("-target %q: want an http://127.0.0.1:PORT/ URL (load goes only to a local target)", *target)
		}
		if *duration <= 0 || *duration > 10*time.Minute {
			return fmt.Errorf("-duration %s: want 0 < duration ≤ 10m", *duration)
		}
		return coord(ctx, rdb, *workers, *target, *duration, *conc, *rate, stdout, stderr)
	}
	return errors.New(usage)
}

func worker(ctx context.Context, rdb *redis.Client, id string, stderr io.Writer) error {
	pool, err := cluster.NewPool(rdb, cluster.PoolOptions{ID: id, Runner: &loadrun.SegmentRunner{}, Capacity: 1,
		Logf: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }})
	if err != nil {
		return err
	}
	return pool.Run(ctx)
}

type row struct {
	ID       string  `json:"id"`
	Requests int64   `json:"requests"`
	RPS      float64 `json:"rps"`
	Dropped  int64   `json:"dropped"`
}

type result struct {
	Workers  int     `json:"workers"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	Dropped  int64   `json:"dropped"`
	PerW     []row   `json:"per_worker"`
}

func coord(ctx context.Context, rdb *redis.Client, n int, target string, d time.Duration, conc int, rate float64, stdout, stderr io.Writer) error {
	cfg := fmt.Sprintf("target: %s\nduration: %s\nconcurrency: %d\ntimeout: 5s\n", target, d, conc)
	if rate > 0 {
		cfg += fmt.Sprintf("rate: %g\n", rate)
	}
	lc, err := spec.Parse("clusterbench", []byte(cfg))
	if err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return err
	}
	wire, err := loadrun.EncodeSpec(lc)
	if err != nil {
		return err
	}
	out, err := cluster.Coordinate(ctx, rdb, cluster.Run{Spec: wire, Duration: d + load.DefaultGrace, Workers: n, JoinTimeout: 20 * time.Second},
		cluster.CoordOptions{Coordinator: "clusterbench", Logf: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }})
	if err != nil {
		return err
	}
	tot := out.Total
	res := result{Workers: n, Requests: tot.Requests, Errors: tot.Errors, RPS: float64(tot.Requests) / d.Seconds(), Dropped: tot.Dropped,
		P50ms: ms(tot.Quantile(0.50)), P99ms: ms(tot.Quantile(0.99))}
	for _, w := range out.Workers {
		res.PerW = append(res.PerW, row{ID: w.ID, Requests: w.Total.Requests, RPS: float64(w.Total.Requests) / d.Seconds(), Dropped: w.Dropped})
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, strings.TrimSpace(string(b)))
	return err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// table turns coord's JSON lines into a Markdown table.
func table(in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(in)
	fmt.Fprintln(out, "| workers | requests | aggregate req/s | vs 1 worker | p50 | p99 | per worker req/s | dropped |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|")
	base := 0.0
	for {
		var r result
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read results: %w", err)
		}
		if base == 0 {
			base = r.RPS
		}
		var rps []string
		for _, w := range r.PerW {
			rps = append(rps, fmt.Sprintf("%.0f", w.RPS))
		}
		fmt.Fprintf(out, "| %d | %d | %.0f | %.2f× | %.2f ms | %.2f ms | %s | %d |\n", r.Workers, r.Requests, r.RPS, r.RPS/base,
			r.P50ms, r.P99ms, strings.Join(rps, " / "), r.Dropped)
	}
}
