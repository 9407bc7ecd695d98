// Command sut is the system under test of the Docker tests: a small HTTP
// service with a health check and an endpoint that burns CPU. Tests build
// it as a static binary and put it in a local image; it is never shipped.
//
//	sut               serve on :$PORT (default 8080); /hits lists the
//	                  tagged requests it got (see below)
//	sut check [URL]   exit 0 when URL (default the local /healthz) answers 200
//	sut fail          print a message and exit 3
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
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
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	// A request with an X-Forgeload-Segment header (a distributed load
	// test's worker/segment tag) is recorded with its arrival time; /hits
	// returns them as JSON: tag → Unix nanoseconds.
	var (
		mu   sync.Mutex
		hits = map[string][]int64{}
	)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if tag := r.Header.Get("X-Forgeload-Segment"); tag != "" {
			now := time.Now().UnixNano()
			mu.Lock()
			hits[tag] = append(hits[tag], now)
			mu.Unlock()
		}
		fmt.Fprintln(w, "hello")
	})
	mux.HandleFunc("/hits", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(hits)
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
	fmt.Println("sut: listening on :" + port)
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "sut:", err)
		os.Exit(1)
	}
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
