package load

import (
	"sync"
	"time"
)

// rampingExecutor is the closed model with a moving number of users: it
// starts a worker for the most users the plan ever asks for (VUStages,
// then ScaleVUs, this host's share), and a controller that sets how many
// of them are active every vuEvalInterval, until the run stops.
type rampingExecutor struct {
	closedExecutor
}

func (x *rampingExecutor) start(wg *sync.WaitGroup) {
	x.startUsers()
	wg.Go(x.controller)
}

// controller re-evaluates the users' target every vuEvalInterval.
func (x *rampingExecutor) controller() {
	t := time.NewTicker(vuEvalInterval)
	defer t.Stop()
	for {
		select {
		case <-x.e.stop:
			return
		case <-t.C:
		}
		x.setActive(int64(x.vuCount()))
	}
}
