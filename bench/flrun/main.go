package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
	"github.com/forgeload/forgeload/internal/pkg/load/httpload"
	"github.com/forgeload/forgeload/internal/pkg/load/outcome/summary"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "flrun:", err)
		os.Exit(2)
	}
}

type config struct {
	target, client, jsonOut, cpuProfile, memProfile, trace string
	conc                                                   int
	rate                                                   float64
	dur, timeout                                           time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("flrun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.target, "target", "", "http:// URL to send GET requests to (required)")
	fs.StringVar(&c.client, "client", "h1", "h1 (httpload's default HTTP/1.1 fast path), nethttp (httpload over net/http) or raw (bench-only HTTP/1.1 client)")
	fs.IntVar(&c.conc, "c", 50, "concurrency: workers (open model) or looping users (closed model)")
	fs.Float64Var(&c.rate, "rate", 0, "arrival rate in req/s; 0 selects the closed model")
	fs.DurationVar(&c.dur, "d", 10*time.Second, "duration")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.StringVar(&c.jsonOut, "json", "", "write the JSON summary to this file (default stdout)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
	fs.StringVar(&c.memProfile, "memprofile", "", "write an allocation profile to this file")
	fs.StringVar(&c.trace, "trace", "", "write a runtime execution trace of the run to this file")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("parse flags: %w", err)
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q: flrun takes flags only", fs.Arg(0))
	case c.target == "":
		return c, fmt.Errorf("-target is required: give the http:// URL of bench/target")
	case c.client != "h1" && c.client != "nethttp" && c.client != "raw":
		return c, fmt.Errorf("-client %q is unknown: use h1, nethttp or raw", c.client)
	case c.conc < 1:
		return c, fmt.Errorf("-c %d: use at least 1", c.conc)
	case c.rate < 0:
		return c, fmt.Errorf("-rate %v: use 0 (closed model) or a positive rate", c.rate)
	case c.dur <= 0 || c.dur > 10*time.Minute:
		return c, fmt.Errorf("-d %s: use a duration in (0, 10m]; every bench run is bounded", c.dur)
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	var req load.Requester
	switch c.client {
	case "raw":
		rc, err := newRawClient(c.target, c.conc, c.timeout)
		if err != nil {
			return err
		}
		defer rc.close()
		req = rc
	default:
		d, err := httpload.New(httpload.Options{
			Endpoints:   []httpload.Endpoint{{URL: c.target}},
			Timeout:     c.timeout,
			Connections: c.conc,
			Protocol:    httpload.HTTP1,
			NetHTTP:     c.client == "nethttp",
		})
		if err != nil {
			return err
		}
		defer d.Close()
		req = d
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return fmt.Errorf("create cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("start cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if c.memProfile != "" {
		runtime.MemProfileRate = 4096
	}
	if c.trace != "" {
		f, err := os.Create(c.trace)
		if err != nil {
			return fmt.Errorf("create trace: %w", err)
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return fmt.Errorf("start trace: %w", err)
		}
		defer trace.Stop()
	}
	res, err := load.Run(ctx, load.Options{Requester: req, Concurrency: c.conc, Rate: c.rate, Duration: c.dur})
	if err != nil {
		return err
	}
	if c.memProfile != "" {
		f, err := os.Create(c.memProfile)
		if err != nil {
			return fmt.Errorf("create heap profile: %w", err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return fmt.Errorf("write heap profile: %w", err)
		}
	}
	out := stdout
	if c.jsonOut != "" {
		f, err := os.Create(c.jsonOut)
		if err != nil {
			return fmt.Errorf("create json output: %w", err)
		}
		defer f.Close()
		out = f
	}
	s := summary.Of(res, nil)
	return s.WriteJSON(out)
}
