package summary

import (
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }
