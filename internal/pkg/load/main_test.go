package load

import (
	"flag"
	"os"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// TestMain turns the timerfd wait of the last millisecond before an
// arrival off: most tests run on testing/synctest's fake clock, which a
// real timerfd would not advance. TestSleepUntilIsPrecise and
// TestPreciseWaitsWithOneP cover it.
//
// Four tests run at once unless -test.parallel says otherwise: the few on
// the real clock mostly wait out their runs (2.5 s at most), and at one per
// CPU the package took twice that.
func TestMain(m *testing.M) {
	testmain.NoRaceExitSleep()
	flag.Parse()
	testmain.DefaultParallel(4)
	preciseWindow = 0
	os.Exit(m.Run())
}
