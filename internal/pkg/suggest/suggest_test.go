package suggest

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "abd", 1}, {"capacty", "capacity", 1},
		{"kitten", "sitting", 3}, {"", "abc", 3}, {strings.Repeat("a", 65), "a", maxLen + 1},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	t.Parallel()
	names := []string{"capacity", "labels", "timeout", "secrets"}
	tests := []struct{ in, want string }{
		{"capacty", "capacity"},
		{"secret", "secrets"},
		{"Labels", "labels"}, // one edit
		{"xyz", ""},          // nothing close
		{"tim", ""},          // 4 edits away
		{"timeot", "timeout"},
	}
	for _, tt := range tests {
		if got := Closest(tt.in, names, nil); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Closest("LABELS", names, strings.ToLower); got != "labels" {
		t.Errorf("Closest with a lower-casing norm = %q, want labels", got)
	}
}
