package report

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"
)

const (
	// MinMaskLen is the shortest mask, in bytes, that the reporter applies.
	// Shorter values (after trimming surrounding white space) are ignored:
	// masking "a" or "12" would blank ordinary text in every line while
	// hiding almost nothing.
	MinMaskLen = 3

	// maxRowBytes is the longest row content sent to the forge; longer
	// lines are split into several rows.
	maxRowBytes = 64 << 10

	// maskText replaces every masked value.
	maskText = "***"
)

// masker replaces secret values in log lines. It is immutable; the Reporter
// swaps in a new one when a mask is added.
type masker struct {
	masks  []string // longest first, unique
	rep    *strings.Replacer
	maxLen int
}

// maskParts splits a secret value into the strings that must be masked: each
// line of a multi-line value, trimmed, if at least MinMaskLen bytes long.
func maskParts(v string) []string {
	var out []string
	for line := range strings.SplitSeq(v, "\n") {
		line = strings.TrimSpace(line)
		if len(line) >= MinMaskLen {
			out = append(out, line)
		}
	}
	return out
}

// with returns a masker that also masks the parts of vs. It returns m itself
// when nothing new was added.
func (m *masker) with(vs ...string) *masker {
	var add []string
	for _, v := range vs {
		for _, p := range maskParts(v) {
			if m == nil || !slices.Contains(m.masks, p) {
				if !slices.Contains(add, p) {
					add = append(add, p)
				}
			}
		}
	}
	if len(add) == 0 && m != nil {
		return m
	}
	n := &masker{}
	if m != nil {
		n.masks = append(n.masks, m.masks...)
	}
	n.masks = append(n.masks, add...)
	// Longest first, so that a secret containing another secret is masked
	// whole (strings.Replacer tries old strings in argument order).
	slices.SortStableFunc(n.masks, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(n.masks))
	for _, s := range n.masks {
		pairs = append(pairs, s, maskText)
		n.maxLen = max(n.maxLen, len(s))
	}
	if len(pairs) > 0 {
		n.rep = strings.NewReplacer(pairs...)
	}
	return n
}

// apply masks every secret in s.
func (m *masker) apply(s string) string {
	if m == nil || m.rep == nil {
		return s
	}
	return m.rep.Replace(s)
}

// safeCut returns the largest cut point c ≤ want that no mask match inside b
// straddles, where matches are found as strings.Replacer finds them: left to
// right, the longest mask first, without overlaps. Masking b[:c] and b[c:]
// separately then masks exactly what masking b whole would, so the bytes
// before c can be emitted on their own. The caller keeps want ≤
// len(b)-(maxLen-1), so that every match starting before want lies inside b.
func (m *masker) safeCut(b []byte, want int) int {
	if m == nil || len(m.masks) == 0 {
		return want
	}
	best, i := 0, 0
	for i < want {
		best = i
		n := 1
		for _, s := range m.masks {
			if bytes.HasPrefix(b[i:], []byte(s)) {
				n = len(s)
				break
			}
		}
		i += n
	}
	if i == want {
		best = want
	}
	return best
}

// cleanLine turns raw output bytes into row contents: trailing CR removed,
// secrets masked, invalid UTF-8 replaced with U+FFFD, and split into rows of
// at most maxRowBytes.
func cleanLine(m *masker, line []byte) []string {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	s := m.apply(string(line))
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxRowBytes {
		return []string{s}
	}
	var out []string
	for len(s) > maxRowBytes {
		c := maxRowBytes
		for c > 0 && !utf8.RuneStart(s[c]) {
			c--
		}
		out = append(out, s[:c])
		s = s[c:]
	}
	return append(out, s)
}
