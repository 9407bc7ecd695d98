package load_test

import (
	"context"
	"fmt"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// nop is the simplest [load.Requester]: every request succeeds at once and
// reports nothing.
type nop struct{}

func (nop) Do(context.Context) error                     { return nil }
func (nop) DoSample(context.Context, *load.Sample) error { return nil }

// A closed-loop run of exactly 100 requests over 4 workers, then the text
// summary's request count.
func ExampleRun() {
	res, err := load.Run(context.Background(), load.Options{Requester: nop{}, Concurrency: 4, Total: 100})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("requests:", res.Requests, "errors:", res.Errors)
	// Output: requests: 100 errors: 0
}

// The global arrival schedule of a ramp from 0 to 100 req/s over 10 s:
// arrival k is due when the integral of the rate reaches k.
func ExampleNewSchedule() {
	s := load.NewSchedule(&load.Options{Stages: []load.Stage{load.Ramp(0, 100, 10*time.Second)}})
	for range 4 {
		k, t, _ := s.Next()
		fmt.Printf("t_%d = %v\n", k, t.Round(time.Millisecond))
	}
	// Output:
	// t_0 = 0s
	// t_1 = 447ms
	// t_2 = 632ms
	// t_3 = 775ms
}
