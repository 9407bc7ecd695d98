package redistest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLaunchRefusesAnotherServersPort: when another test's redis-server
// took the probed port first, launch must not take that server's PONG
// for its own (the two tests would then share one Redis and its keys).
func TestLaunchRefusesAnotherServersPort(t *testing.T) {
	t.Parallel()
	other := Start(t)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found")
	}
	s := &Server{t: t, bin: bin, port: other.port}
	err = s.launch()
	if err == nil {
		s.Stop()
		t.Fatal("launch on a port another redis-server holds succeeded; it answered for ours")
	}
	if !strings.Contains(err.Error(), "exited early") {
		t.Errorf("launch error %q, want it to say our server exited early", err)
	}
}
