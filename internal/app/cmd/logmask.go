package cmd

import (
	"sync"

	"github.com/sirupsen/logrus"
)

// jobMasks is a logrus hook that hides, in every line of the daemon's own
// log, the secrets of the jobs whose distributed runs this daemon
// coordinates: their errors and the lines of this host's segments carry
// the job's input (a target's path, an endpoint's name). Each run adds its
// job's mask for as long as it runs. Its zero value is ready to use; it is
// safe for concurrent use.
type jobMasks struct {
	mu    sync.RWMutex
	next  int
	masks map[int]func(string) string
}

var _ logrus.Hook = (*jobMasks)(nil)

// add applies mask to every line until the returned function is called.
// A nil mask adds nothing.
func (m *jobMasks) add(mask func(string) string) (remove func()) {
	if mask == nil {
		return func() {}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.masks == nil {
		m.masks = map[int]func(string) string{}
	}
	m.next++
	id := m.next
	m.masks[id] = mask
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.masks, id)
	}
}

// Levels implements logrus.Hook: every level.
func (m *jobMasks) Levels() []logrus.Level { return logrus.AllLevels }

// Fire implements logrus.Hook: it masks the message and the text and
// error fields of e, a copy logrus made for this line.
func (m *jobMasks) Fire(e *logrus.Entry) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.masks) == 0 {
		return nil
	}
	apply := func(s string) string {
		for _, mask := range m.masks {
			s = mask(s)
		}
		return s
	}
	e.Message = apply(e.Message)
	for k, v := range e.Data {
		switch x := v.(type) {
		case string:
			e.Data[k] = apply(x)
		case error:
			e.Data[k] = apply(x.Error())
		}
	}
	return nil
}
