// Command sut is the system under test of the Docker tests and the load
// target of the cluster tests: a small HTTP service with a health check, an
// endpoint that burns CPU, endpoints with a service time, and a record of
// every request it got. Tests build it as a static binary, without the race
// detector (serving load in a race-built test process cost that process
// about 0.2 ms of CPU a request), and run it in a local image or as a
// process on 127.0.0.1; it is never shipped.
//
//	sut               serve on $LISTEN, or :$PORT (default 8080); see below
//	sut check [URL]   exit 0 when URL (default the local /healthz) answers 200
//	sut fail          print a message and exit 3
//
// Every request to a path other than those below is recorded with its
// arrival time and its X-Forgeload-Segment header (a distributed load
// test's worker/segment tag, "" without one), and answered "hello":
//
//	/hold            after 150 ms; the most /hold requests held at once per
//	                 tag is recorded too (a closed model's VUs)
//	/slow            after the slow time: 1 s, or what /admin/slow set
//
// and these are not recorded:
//
//	/healthz             200 "ok"
//	/burn?ms=N           keeps a core busy for N ms (1 to 1000)
//	/hits?from=N         the records from the N-th on (0 first), as JSON
//	                     [{"tag": "w1/0", "at": Unix ns}, …]
//	/held                the most /hold requests held at once, per tag
//	/admin/slow?d=1.5s   sets the slow time
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "check":
			os.Exit(check())
		case "fail":
			fmt.Println("sut: failing on purpose: the database is missing")
			os.Exit(3)
		}
	}
	addr := os.Getenv("LISTEN")
	if addr == "" {
		port := os.Getenv("PORT")
		if port == "" {
			port = "8080"
		}
		addr = ":" + port
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	rec := &recorder{held: map[string]int{}, maxHeld: map[string]int{}, slow: time.Second}
	mux.HandleFunc("/", rec.serve)
	mux.HandleFunc("/hits", rec.hits)
	mux.HandleFunc("/held", func(w http.ResponseWriter, _ *http.Request) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		_ = json.NewEncoder(w).Encode(rec.maxHeld)
	})
	mux.HandleFunc("/admin/slow", func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("d"))
		if err != nil || d < 0 {
			http.Error(w, "d: want a duration such as 1.5s", http.StatusBadRequest)
			return
		}
		rec.mu.Lock()
		rec.slow = d
		rec.mu.Unlock()
	})
	// /burn?ms=N keeps one core busy for N ms per request.
	mux.HandleFunc("/burn", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		ms = min(max(ms, 1), 1000)
		end := time.Now().Add(time.Duration(ms) * time.Millisecond)
		x := 0
		for time.Now().Before(end) {
			for i := 0; i < 1000; i++ {
				x += i
			}
		}
		fmt.Fprintln(w, x)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sut:", err)
		os.Exit(1)
	}
	if strings.HasPrefix(addr, ":") {
		fmt.Println("sut: listening on " + addr)
	} else {
		fmt.Println("sut: listening on " + ln.Addr().String()) // a port 0 is chosen now
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "sut:", err)
		os.Exit(1)
	}
}

// holdFor is how long /hold takes: long against a VU's own time between
// requests, so that a segment's VUs are all held at once at some point.
const holdFor = 150 * time.Millisecond

// recorder records the requests the sut serves.
type recorder struct {
	mu      sync.Mutex
	log     []hit
	held    map[string]int // tag → /hold requests held now
	maxHeld map[string]int // tag → the most held at once
	slow    time.Duration
}

// hit is one recorded request.
type hit struct {
	Tag string `json:"tag"`
	At  int64  `json:"at"` // Unix ns
}

func (rc *recorder) serve(w http.ResponseWriter, r *http.Request) {
	tag := r.Header.Get("X-Forgeload-Segment")
	now := time.Now().UnixNano()
	rc.mu.Lock()
	rc.log = append(rc.log, hit{tag, now})
	slow := rc.slow
	if r.URL.Path == "/hold" {
		rc.held[tag]++
		rc.maxHeld[tag] = max(rc.maxHeld[tag], rc.held[tag])
	}
	rc.mu.Unlock()
	switch r.URL.Path {
	case "/hold":
		time.Sleep(holdFor) // the service time
		rc.mu.Lock()
		rc.held[tag]-- // before the answer: the VU cannot send again before this
		rc.mu.Unlock()
	case "/slow":
		time.Sleep(slow) // the service time
	}
	fmt.Fprintln(w, "hello")
}

// hits answers /hits?from=N: the records from the N-th on, so that a test
// polling the record reads each request once.
func (rc *recorder) hits(w http.ResponseWriter, r *http.Request) {
	from, err := strconv.Atoi(r.URL.Query().Get("from"))
	if err != nil || from < 0 {
		from = 0
	}
	rc.mu.Lock()
	out := rc.log[min(from, len(rc.log)):]
	rc.mu.Unlock()
	if out == nil {
		out = []hit{}
	}
	_ = json.NewEncoder(w).Encode(out) // append-only: the slice stays valid unlocked
}

func check() int {
	url := "http://127.0.0.1:8080/healthz"
	if p := os.Getenv("PORT"); p != "" {
		url = "http://127.0.0.1:" + p + "/healthz"
	}
	if len(os.Args) > 2 {
		url = os.Args[2]
	}
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Println("check:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Println("check:", resp.Status)
		return 1
	}
	fmt.Println("check: ok")
	return 0
}
