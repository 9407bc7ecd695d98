package jobrun

import (
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

// runParallel is how many tests run at once unless -test.parallel says
// otherwise: they mostly wait on shells, timeouts and a fake forge, so one
// per CPU left this package at three times its length.
const runParallel = 6

func TestMain(m *testing.M) { testmain.RunParallel(m, runParallel) }
