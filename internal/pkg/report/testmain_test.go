package report

import (
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// TestMain runs four tests at once unless -test.parallel says otherwise:
// the slow ones wait in real time (on a fake forge that goes down and comes
// back), and at one per CPU they ran one after another near the end of the
// suite, with the machine half idle.
func TestMain(m *testing.M) { testmain.RunParallel(m, 4) }
