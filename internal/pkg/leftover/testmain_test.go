package leftover

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// helperOwner, when set, makes the test binary a process that calls Stop
// for that owner and prints what it killed, for TestStopSparesItself.
const helperOwner = "LEFTOVER_TEST_STOP_OWNER"

func TestMain(m *testing.M) {
	if owner := os.Getenv(helperOwner); owner != "" {
		procs, err := Stop(context.Background(), owner)
		fmt.Printf("killed %v err %v\n", procs, err)
		os.Exit(0)
	}
	testmain.Run(m)
}
