package actcache

import (
	"fmt"
	"strconv"
	"strings"
)

// maxOffset bounds every byte offset a request names, far above any
// cache.max_mb, so that no sum of offsets overflows.
const maxOffset = 1 << 50

// parseContentRange parses a chunk's Content-Range header, "bytes
// START-END/TOTAL" with END inclusive and TOTAL a number or "*", and
// returns the range with end exclusive.
func parseContentRange(h string) (start, end int64, err error) {
	bad := func(why string) (int64, int64, error) {
		return 0, 0, fmt.Errorf("Content-Range %q: %s (want bytes START-END/* with START <= END, such as bytes 0-1023/*)", clip(h), why)
	}
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return bad("not in bytes")
	}
	rng, total, ok := strings.Cut(rest, "/")
	if !ok {
		return bad("no /TOTAL")
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return bad("no START-END")
	}
	start, err1 := parseOffset(a)
	last, err2 := parseOffset(b)
	if err1 != nil || err2 != nil {
		return bad("START and END must be whole numbers")
	}
	if last < start {
		return bad("END is before START")
	}
	if total != "*" {
		n, err := parseOffset(total)
		if err != nil || n <= last {
			return bad("TOTAL must be * or a number above END")
		}
	}
	return start, last + 1, nil
}

// parseOffset parses a decimal byte offset from 0 to maxOffset.
func parseOffset(s string) (int64, error) {
	if s == "" || len(s) > 16 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a byte offset", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > maxOffset {
		return 0, fmt.Errorf("%q is not a byte offset", s)
	}
	return n, nil
}

// parseKeys parses a lookup's keys parameter: the key and then the
// restore-keys, separated by commas.
func parseKeys(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("keys is empty (want the cache key, then the restore-keys, separated by commas)")
	}
	keys := strings.Split(s, ",")
	if len(keys) > MaxKeys {
		return nil, fmt.Errorf("keys has %d keys (want at most %d: the key and up to %d restore-keys)", len(keys), MaxKeys, MaxKeys-1)
	}
	for i, k := range keys {
		if err := checkKey(fmt.Sprintf("keys[%d]", i), k); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// checkKey checks a key or version: not empty, at most MaxKeyLen bytes.
func checkKey(field, k string) error {
	if k == "" {
		return fmt.Errorf("%s is empty", field)
	}
	if len(k) > MaxKeyLen {
		return fmt.Errorf("%s is %d bytes long (want at most %d)", field, len(k), MaxKeyLen)
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
