package poll

import (
	"time"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
)

// maxBackoffShift caps the exponent of the backoff: the interval grows to at
// most 2^5 = 32 times the base before the ceiling applies.
const maxBackoffShift = 5

// Interval returns how long the Poller waits after n consecutive empty
// responses or errors: base when n <= 1, otherwise base × 2^min(n-1, 5),
// capped at ceiling ([backoff.Exp]). A ceiling <= 0 means no cap. It is a
// pure function; the Poller adds [backoff.Jitter] to its result.
func Interval(n int, base, ceiling time.Duration) time.Duration {
	return backoff.Exp(min(n, maxBackoffShift+1), base, ceiling)
}
