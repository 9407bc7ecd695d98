package resultview

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// TestMain is testmain.Run, plus closing the Chromium the browser tests
// share: closeBrowser waits until the browser's processes are gone, which
// os.Exit would not. Four tests run at once unless -test.parallel says
// otherwise: the browser tests wait on Chromium, and at one per CPU they
// ran one after another near the end of the suite, with the machine half
// idle.
func TestMain(m *testing.M) {
	testmain.NoRaceExitSleep()
	flag.Parse()
	testmain.DefaultParallel(4)
	code := m.Run()
	if err := closeBrowser(); err != nil {
		fmt.Fprintf(os.Stderr, "close the shared chromium: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
