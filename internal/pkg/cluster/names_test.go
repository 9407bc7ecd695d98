package cluster

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCutName: a job or step name from a run's meta is cut to MaxNameLen
// bytes, at a character boundary, so a hostile one holds no more memory
// on a worker; a shorter one, and none, come through as they are.
func TestCutName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"soak", "soak"},
		{strings.Repeat("x", MaxNameLen), strings.Repeat("x", MaxNameLen)},
		{strings.Repeat("x", MaxNameLen+1), strings.Repeat("x", MaxNameLen)},
		{"x" + strings.Repeat("é", MaxNameLen), "x" + strings.Repeat("é", (MaxNameLen-1)/2)},
	} {
		got := cutName(c.in)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("cutName(%d bytes) = %d bytes %q, want %d bytes", len(c.in), len(got), got, len(c.want))
		}
	}
}
