package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

const (
	// MinMaskLen is the shortest mask, in bytes, that the reporter applies.
	// Shorter values (after trimming surrounding white space) are ignored:
	// masking "a" or "12" would blank ordinary text in every line while
	// hiding almost nothing.
	MinMaskLen = 3

	// MaxJobMasks is the most values a job may add with [Reporter.AddJobMask]
	// (the ::add-mask:: workflow command), counted line by line as masked.
	MaxJobMasks = 10000
	// MaxJobMaskBytes bounds the total length of those values.
	MaxJobMaskBytes = 1 << 20

	// maxRowBytes is the longest row content sent to the forge; longer
	// lines are split into several rows.
	maxRowBytes = 64 << 10

	// maskText replaces every masked value.
	maskText = "***"
)

// masker replaces secret values, and the forms they take when escaped or
// encoded (see maskForms), in text that leaves the runner. One masker
// serves a whole job: every writer, Logf, outputs and summaries. Adding a
// value costs time in proportion to its length, not to the number of values
// already added. It is safe for concurrent use.
//
// Matching: every occurrence of every pattern is found, and each maximal run
// of overlapping or adjacent occurrences becomes one maskText. So a value is
// hidden whole even where it overlaps another value, which a left-to-right
// replacer would cut short.
type masker struct {
	mu sync.RWMutex
	// byKey holds, by their first MinMaskLen bytes, the distinct lengths of
	// the patterns, longest first: at a position, the first length whose
	// text is in patterns is the longest match there. A position costs one
	// lookup per distinct length, however many patterns share the prefix
	// (thousands of JWTs all start "eyJ").
	byKey map[uint32][]int
	// pairs has bit b0<<8|b1 set when some pattern starts with b0 b1: a
	// cheap filter before the map lookup.
	pairs    [1 << 16 / 64]uint64
	patterns map[string]struct{}
	values   map[string]struct{} // mask parts added so far
	maxLen   int                 // longest pattern

	jobMasks, jobBytes int // what AddJobMask added, for its caps
}

// newMasker returns a masker for the values vs (see maskParts).
func newMasker(vs ...string) *masker {
	m := &masker{byKey: map[uint32][]int{}, patterns: map[string]struct{}{}, values: map[string]struct{}{}}
	for _, v := range vs {
		for _, p := range maskParts(v) {
			m.addPart(p)
		}
	}
	return m
}

// maskParts splits a secret value into the strings that must be masked: each
// line of a multi-line value, trimmed, if at least MinMaskLen bytes long.
func maskParts(v string) []string {
	var out []string
	for line := range strings.SplitSeq(v, "\n") {
		line = strings.TrimSpace(line)
		if len(line) >= MinMaskLen && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

// maskForms returns the strings that reveal p: p itself; p escaped as in a
// JSON string, with and without HTML escaping; p escaped as Go's %q and %+q
// write it; p HTML-escaped, and escaped for a Markdown table cell as the
// load summaries write it; p URL-encoded as a query value and as a path
// segment; and p
// base64-encoded (standard and URL alphabets) at each of the three offsets
// it can have inside a longer encoded text, as far as the encoding depends
// on p alone.
func maskForms(p string) []string {
	forms := []string{p}
	add := func(s string) {
		if len(s) >= MinMaskLen && !slices.Contains(forms, s) {
			forms = append(forms, s)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(p) == nil {
		add(strings.TrimSuffix(strings.TrimSuffix(buf.String(), "\n"), `"`)[1:])
	}
	if b, err := json.Marshal(p); err == nil {
		add(string(b[1 : len(b)-1]))
	}
	for _, q := range []string{strconv.Quote(p), strconv.QuoteToASCII(p)} {
		add(q[1 : len(q)-1])
	}
	add(html.EscapeString(p))
	add(htmlTemplateText.Replace(p))
	add(canonicalHeaderPart(p, true))
	add(canonicalHeaderPart(p, false))
	add(markdownCell.Replace(p))
	add(url.QueryEscape(p))
	add(url.PathEscape(p))
	for off := range 3 {
		// p starting at offset off of a 3-byte group: its first whole group
		// starts (3-off)%3 bytes in; only whole groups encode the same
		// whatever surrounds p.
		q := p[(3-off)%3:]
		q = q[:len(q)/3*3]
		add(base64.StdEncoding.EncodeToString([]byte(q)))
		add(base64.URLEncoding.EncodeToString([]byte(q)))
	}
	return forms
}

// htmlTemplateText is how html/template escapes text and quoted attribute
// values: as html.EscapeString, plus '+' and NUL.
var htmlTemplateText = strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "+", "&#43;", "\x00", "\uFFFD")

// canonicalHeaderPart is p as it reads inside a header name canonicalised
// by net/http (textproto.CanonicalMIMEHeaderKey): a letter is upper case
// after a '-' and lower case elsewhere; the first letter is upper case when
// upperFirst (p starts the name or follows a '-'), else lower case.
func canonicalHeaderPart(p string, upperFirst bool) string {
	b := []byte(p)
	upper := upperFirst
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case !upper && 'A' <= c && c <= 'Z':
			b[i] = c - 'A' + 'a'
		}
		upper = c == '-'
	}
	return string(b)
}

// markdownCell is how the load summaries escape text in a Markdown table.
var markdownCell = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")

// addPart adds one mask part and its forms. m.mu must be held for writing,
// or m not yet shared.
func (m *masker) addPart(p string) {
	if _, ok := m.values[p]; ok {
		return
	}
	m.values[p] = struct{}{}
	for _, s := range maskForms(p) {
		if _, ok := m.patterns[s]; ok {
			continue
		}
		m.patterns[s] = struct{}{}
		k := key3(s, 0)
		lens := m.byKey[k]
		if i, found := slices.BinarySearchFunc(lens, len(s), func(a, b int) int { return b - a }); !found {
			m.byKey[k] = slices.Insert(lens, i, len(s))
		}
		pair := int(s[0])<<8 | int(s[1])
		m.pairs[pair/64] |= 1 << (pair % 64)
		m.maxLen = max(m.maxLen, len(s))
	}
}

// add masks the parts of v from now on, uncapped.
func (m *masker) add(v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range maskParts(v) {
		m.addPart(p)
	}
}

// addJob is add for a value the job supplied: it refuses v whole, and says
// why, when its new parts would take the job past MaxJobMasks values or
// MaxJobMaskBytes bytes.
func (m *masker) addJob(v string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, size := 0, 0
	parts := maskParts(v)
	for _, p := range parts {
		if _, ok := m.values[p]; !ok {
			n++
			size += len(p)
		}
	}
	if n == 0 {
		return nil
	}
	if m.jobMasks+n > MaxJobMasks || m.jobBytes+size > MaxJobMaskBytes {
		return fmt.Errorf("::add-mask:: refused: this job already added %d masks (%d bytes) and the limit is %d masks and %d bytes per job, so this value is NOT masked; mask fewer values (each line of a value counts as one)",
			m.jobMasks, m.jobBytes, MaxJobMasks, MaxJobMaskBytes)
	}
	m.jobMasks += n
	m.jobBytes += size
	for _, p := range parts {
		m.addPart(p)
	}
	return nil
}

func key3[T string | []byte](s T, i int) uint32 {
	return uint32(s[i])<<16 | uint32(s[i+1])<<8 | uint32(s[i+2])
}

// longestAt returns the length of the longest pattern at s[i:], or 0.
// m.mu must be held.
func longestAt[T string | []byte](m *masker, s T, i int) int {
	if len(s)-i < MinMaskLen {
		return 0
	}
	pair := int(s[i])<<8 | int(s[i+1])
	if m.pairs[pair/64]&(1<<(pair%64)) == 0 {
		return 0
	}
	for _, n := range m.byKey[key3(s, i)] {
		if n > len(s)-i {
			continue
		}
		if _, ok := m.patterns[string(s[i:i+n])]; ok {
			return n
		}
	}
	return 0
}

// apply masks every secret in s.
func (m *masker) apply(s string) string {
	if m == nil {
		return s
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.applyLocked(s)
}

func (m *masker) applyLocked(s string) string {
	if len(m.patterns) == 0 {
		return s
	}
	var b strings.Builder
	done := 0          // bytes of s written to b
	start, end := 0, 0 // the current run of occurrences, when end > 0
	for i := 0; i+MinMaskLen <= len(s); i++ {
		n := longestAt(m, s, i)
		if n == 0 {
			continue
		}
		if end > 0 && i <= end {
			end = max(end, i+n)
			continue
		}
		if end > 0 {
			b.WriteString(s[done:start])
			b.WriteString(maskText)
			done = end
		}
		start, end = i, i+n
	}
	if end == 0 {
		return s
	}
	b.WriteString(s[done:start])
	b.WriteString(maskText)
	b.WriteString(s[end:])
	return b.String()
}

// cleanLine turns raw output bytes into row contents: trailing CR removed,
// secrets masked, invalid UTF-8 replaced with U+FFFD, and split into rows of
// at most maxRowBytes.
func cleanLine(m *masker, line []byte) []string {
	if m == nil {
		return cleanMasked(string(line))
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cleanLocked(line)
}

func (m *masker) cleanLocked(line []byte) []string {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return cleanMasked(m.applyLocked(string(line)))
}

// cleanMasked makes masked text valid UTF-8 and splits it into rows of at
// most maxRowBytes, between characters.
func cleanMasked(s string) []string {
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

// cutLong takes rows off the front of an unfinished line buf once it is
// longer than lineLimit (or twice the longest pattern): it returns the rows
// and how many bytes of buf they cover, 0 when buf must wait for more
// bytes. The cut never falls inside an occurrence of a pattern nor inside
// a UTF-8 character, so the rows, and the rows the rest of the line later
// becomes, mask exactly what masking the whole line would. When every
// possible cut falls inside a run of occurrences (a line of secrets
// back to back), the covered front is sent as one maskText row.
func (m *masker) cutLong(buf []byte, lineLimit int) ([]string, int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ml := m.maxLen
	if len(buf) <= max(lineLimit, 2*ml) {
		return nil, 0
	}
	// Every occurrence starting before want lies wholly inside buf, and so
	// does every character.
	want := min(len(buf)-max(ml-1, utf8.UTFMax-1), max(lineLimit, ml))
	if want <= 0 {
		return nil, 0
	}
	good, safe := 0, 0         // last cut ≤ want outside every occurrence (good: and between characters)
	reach := 0                 // furthest end of the occurrences starting before c
	bestStart, bestEnd := 0, 0 // the occurrence starting before want that ends furthest
	for c := 1; c <= want; c++ {
		if n := longestAt(m, buf, c-1); n > 0 {
			reach = max(reach, c-1+n)
			if c-1+n >= bestEnd {
				bestStart, bestEnd = c-1, c-1+n
			}
		}
		if reach <= c {
			safe = c
			if !midRune(buf, c) {
				good = c
			}
		}
	}
	switch {
	case good > 0:
		return m.cleanLocked(buf[:good]), good
	case safe > 0:
		return m.cleanLocked(buf[:safe]), safe
	case bestStart > 0:
		// buf[:want+1] is all covered; every occurrence that starts before
		// bestStart ends by bestEnd, and the occurrence at bestStart, found
		// again at the front of the rest, covers up to there.
		return []string{maskText}, bestStart
	}
	return nil, 0
}

// midRune reports whether cutting b at c would split a UTF-8 character
// (one that is complete in b, or still incomplete at its end).
func midRune(b []byte, c int) bool {
	if c <= 0 || c >= len(b) || utf8.RuneStart(b[c]) {
		return false
	}
	for p := c - 1; p >= 0 && p >= c-(utf8.UTFMax-1); p-- {
		if !utf8.RuneStart(b[p]) {
			continue
		}
		if !utf8.FullRune(b[p:]) {
			return true
		}
		_, size := utf8.DecodeRune(b[p:])
		return size > 1 && p+size > c
	}
	return false
}
