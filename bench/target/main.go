package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "target:", err)
		os.Exit(2)
	}
}

// config is the parsed command line.
type config struct {
	port         int
	mode, impl   string
	every, stall time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("target", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&c.port, "port", 0, "TCP port on 127.0.0.1 (0 picks a free one)")
	fs.StringVar(&c.mode, "mode", "fast", "fast (answer at once) or stall (freeze -stall-for of every -stall-every)")
	fs.StringVar(&c.impl, "impl", "raw", "raw (purpose-built HTTP/1.1 responder) or net (net/http)")
	fs.DurationVar(&c.every, "stall-every", 5*time.Second, "length of a stall window in stall mode")
	fs.DurationVar(&c.stall, "stall-for", time.Second, "how long the start of each window is frozen in stall mode")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("parse flags: %w (flags: -port N -mode fast|stall -impl raw|net -stall-every D -stall-for D)", err)
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q: the target takes flags only", fs.Arg(0))
	case c.port < 0 || c.port > 65535:
		return c, fmt.Errorf("-port %d is out of range: use 0..65535", c.port)
	case c.mode != "fast" && c.mode != "stall":
		return c, fmt.Errorf("-mode %q is unknown: use fast or stall", c.mode)
	case c.impl != "raw" && c.impl != "net":
		return c, fmt.Errorf("-impl %q is unknown: use raw or net", c.impl)
	case c.mode == "stall" && (c.every <= 0 || c.stall <= 0 || c.stall >= c.every):
		return c, fmt.Errorf("-stall-for %s and -stall-every %s: want 0 < stall-for < stall-every", c.stall, c.every)
	}
	if c.mode == "fast" {
		c.stall = 0
	}
	return c, nil
}

// run serves until ctx is done. It prints "listening on http://ADDR" to out
// once the listener is open.
func run(ctx context.Context, args []string, out io.Writer) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)))
	if err != nil {
		return fmt.Errorf("listen on 127.0.0.1:%d: %w (pick a free -port or 0)", c.port, err)
	}
	s := newServer(c.every, c.stall, time.Now)
	return serve(ctx, s, c.impl, ln, func(addr string) {
		fmt.Fprintf(out, "listening on http://%s mode=%s impl=%s\n", addr, c.mode, c.impl)
	})
}

// serve serves s on ln with the chosen implementation until ctx is done,
// then closes ln and waits for every connection's goroutine.
func serve(ctx context.Context, s *server, impl string, ln net.Listener, ready func(addr string)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		s.close()
	}()
	ready(ln.Addr().String())
	if impl == "net" {
		hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ctx.Done()
			_ = hs.Close()
		}()
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
		}
		return nil
	}
	rs := &rawServer{s: s, ln: ln, conns: map[net.Conn]struct{}{}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		_ = ln.Close()
	}()
	return rs.serve()
}
