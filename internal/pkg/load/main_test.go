package load

import (
	"os"
	"testing"
)

// TestMain turns the timerfd wait of the last millisecond before an
// arrival off: most tests run on testing/synctest's fake clock, which a
// real timerfd would not advance. TestSleepUntilIsPrecise and
// TestPreciseWaitsWithOneP cover it.
func TestMain(m *testing.M) {
	preciseWindow = 0
	os.Exit(m.Run())
}
