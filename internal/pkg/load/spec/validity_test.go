package spec

import (
	"strings"
	"testing"
)

// TestMaxConcurrencyAndValidityKeys: max_concurrency and validity parse,
// and bad values are refused naming the key and the fix.
func TestMaxConcurrencyAndValidityKeys(t *testing.T) {
	t.Parallel()
	c := mustParse(t, base+"concurrency: 5\nmax_concurrency: 50\nvalidity: WARN\n")
	if err := c.Validate(); err != nil || c.MaxConcurrency != 50 || c.Validity != ValidityWarn {
		t.Fatalf("Validate = %v, max_concurrency %d, validity %q; want 50 and warn", err, c.MaxConcurrency, c.Validity)
	}
	for _, tc := range []struct{ src, want string }{
		{base + "max_concurrency: -1\n", "max_concurrency: -1 is negative"},
		{base + "concurrency: 10\nmax_concurrency: 5\n", "max_concurrency: 5 is below concurrency 10"},
		{"target: https://x.example.com\nconcurrency: 2\nduration: 1s\nmax_concurrency: 5\n", "max_concurrency: applies to the open model only"},
		{base + "validity: maybe\n", `validity: "maybe" is not a validity policy (want fail, the default, or warn)`},
		{base + "max_concurrency: many\n", "max_concurrency"},
	} {
		c, err := Parse("test.yaml", []byte(tc.src))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to say %q", tc.src, err, tc.want)
		}
	}
	if err := c.Override(map[string]string{"max_concurrency": "80", "validity": "fail"}); err != nil || c.MaxConcurrency != 80 || c.Validity != ValidityFail {
		t.Errorf("inline max_concurrency/validity: %v, %d %q", err, c.MaxConcurrency, c.Validity)
	}
}
