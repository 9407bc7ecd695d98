// Package suggest owns the "did you mean" of forgeload's error messages: it
// finds the known name closest to a misspelt one, so a config, load-spec or
// workflow error can name the fix.
package suggest

// maxLen bounds the names compared; longer ones are never close.
const maxLen = 64

// Closest returns the name in names closest to name by edit distance after
// both are passed through norm (nil compares as given), or "" when none is
// close: within 2 edits and at most a third of the name's length (at least
// 1 edit).
func Closest(name string, names []string, norm func(string) string) string {
	if norm == nil {
		norm = func(s string) string { return s }
	}
	n := norm(name)
	limit := min(2, max(1, len(n)/3))
	best, bestD := "", limit+1
	for _, cand := range names {
		if d := Distance(n, norm(cand)); d < bestD {
			best, bestD = cand, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in bytes. Strings
// longer than 64 bytes are maxLen+1 apart from anything.
func Distance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return maxLen + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
