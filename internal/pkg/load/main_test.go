package load

import (
	"os"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// TestMain turns the timerfd wait of the last millisecond before an
// arrival off: most tests run on testing/synctest's fake clock, which a
// real timerfd would not advance. TestSleepUntilIsPrecise and
// TestPreciseWaitsWithOneP cover it.
func TestMain(m *testing.M) {
	testmain.NoRaceExitSleep()
	preciseWindow = 0
	os.Exit(m.Run())
}
