package resultview

import (
	"fmt"
	"os"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// TestMain is testmain.Run, plus closing the Chromium the browser tests
// share: closeBrowser waits until the browser's processes are gone, which
// os.Exit would not.
func TestMain(m *testing.M) {
	testmain.NoRaceExitSleep()
	code := m.Run()
	if err := closeBrowser(); err != nil {
		fmt.Fprintf(os.Stderr, "close the shared chromium: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
