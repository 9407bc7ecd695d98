package container

import (
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// TestMain runs four tests at once unless -test.parallel says otherwise:
// the slow ones wait in real time (on the Docker Engine: containers, health
// checks, removals), and at one per CPU they ran one after another near the
// end of the suite, with the machine half idle.
func TestMain(m *testing.M) { testmain.RunParallel(m, 4) }
