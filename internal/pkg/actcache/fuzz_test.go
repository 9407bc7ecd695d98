package actcache

import (
	"strings"
	"testing"
)

// FuzzContentRange: any header parses to a range within bounds, or fails.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-1023/*", "bytes 5-5/6", "bytes 9-2/*", "bytes -1-3/*", "bytes 0-99999999999999999/*", "items 0-1/*", "bytes 0-1/1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		start, end, err := parseContentRange(h)
		if err != nil {
			return
		}
		if start < 0 || end <= start || end > maxOffset+1 {
			t.Fatalf("parseContentRange(%q) = %d, %d", h, start, end)
		}
	})
}

// FuzzKeys: any keys parameter parses to 1 to MaxKeys keys, each of 1 to
// MaxKeyLen bytes and without a comma, or fails.
func FuzzKeys(f *testing.F) {
	for _, s := range []string{"a", "a,b,c", "a,,b", ",", strings.Repeat("k,", 20), strings.Repeat("x", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := parseKeys(s)
		if err != nil {
			return
		}
		if len(keys) == 0 || len(keys) > MaxKeys {
			t.Fatalf("parseKeys(%q) gave %d keys", s, len(keys))
		}
		for _, k := range keys {
			if k == "" || len(k) > MaxKeyLen || strings.Contains(k, ",") {
				t.Fatalf("parseKeys(%q) gave key %q", s, k)
			}
		}
	})
}
