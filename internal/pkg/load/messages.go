package load

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxErrorMessages is the most distinct error messages an [ErrorMessages]
// keeps: per endpoint, in a recorder shard, in a second's snapshot and in
// a run's totals. Failures whose message finds no room are counted in
// Other, so a run whose every error differs (an id in each message) holds
// no more than this many strings.
const MaxErrorMessages = 32

// maxSnapshotMessages bounds the distinct messages of a second's snapshot
// over all its endpoints (each also keeps at most MaxErrorMessages): a run
// of a thousand endpoints that all fail differently ships some 80 KB of
// messages a second to a multi-host run's coordinator, not megabytes.
const maxSnapshotMessages = 256

// MaxErrorMessageLen bounds a kept message, in bytes; a longer one is cut
// at a character boundary and ends with "…".
const MaxErrorMessageLen = 256

// ErrorMessages counts failed requests by their error's message (see
// [errorMessage] for the text kept), keeping at most [MaxErrorMessages]
// distinct ones. The zero value is empty and ready to use; it is not safe
// for concurrent use.
type ErrorMessages struct {
	// Counts are the failures of each kept message.
	Counts map[string]int64 `json:"counts,omitempty"`
	// Other counts the failures whose message was not kept: it came when
	// MaxErrorMessages others were already counted.
	Other int64 `json:"other,omitempty"`
}

// Add counts n failures with message msg.
func (m *ErrorMessages) Add(msg string, n int64) {
	if _, ok := m.Counts[msg]; ok {
		m.Counts[msg] += n
		return
	}
	if len(m.Counts) >= MaxErrorMessages {
		m.Other += n
		return
	}
	if m.Counts == nil {
		m.Counts = make(map[string]int64)
	}
	m.Counts[msg] = n
}

// Merge adds o's counts to m. When both hold more distinct messages than
// m can keep, o's most frequent ones are kept first, so the same inputs
// keep the same messages whatever the map order.
func (m *ErrorMessages) Merge(o *ErrorMessages) { m.mergeAtMost(o, MaxErrorMessages) }

// mergeAtMost is Merge adding at most room messages m does not hold yet;
// the failures of the others count as Other. It returns how many it
// added.
func (m *ErrorMessages) mergeAtMost(o *ErrorMessages, room int) (added int) {
	m.Other += o.Other
	if len(o.Counts) == 0 {
		return 0
	}
	add := func(k string, n int64) {
		if _, ok := m.Counts[k]; !ok && added >= room {
			m.Other += n
			return
		}
		before := len(m.Counts)
		m.Add(k, n)
		if len(m.Counts) > before {
			added++
		}
	}
	if len(m.Counts)+len(o.Counts) <= MaxErrorMessages && len(o.Counts) <= room {
		for k, n := range o.Counts {
			add(k, n)
		}
		return added
	}
	for _, k := range byCount(o.Counts) {
		add(k, o.Counts[k])
	}
	return added
}

// reset empties m, keeping its map for reuse.
func (m *ErrorMessages) reset() {
	clear(m.Counts)
	m.Other = 0
}

// byCount returns m's keys, largest count first, then by name.
func byCount(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return keys
}

// statusMessages are StatusError's messages for the codes a Sample
// records, made once, so that counting a target's 503s allocates nothing.
var statusMessages = func() (out [600]string) {
	for code := range out {
		out[code] = StatusError{Code: code}.Error()
	}
	return out
}()

func statusMessage(code int) string {
	if code >= 0 && code < len(statusMessages) {
		return statusMessages[code]
	}
	return StatusError{Code: code}.Error()
}

// errorMessage is the message a failed request is counted under: its
// error's text with the URL that net/http quotes left out (the endpoint
// names the request, and a URL holds per-request values and may hold
// credentials), cut to MaxErrorMessageLen bytes. A failure without an
// error (a driver that set only the class) is its status, or its class.
func errorMessage(err error, s *Sample, class ErrorClass) string {
	if err == nil {
		if s.Status > 0 {
			return statusMessage(s.Status)
		}
		return class.String()
	}
	if se, ok := err.(StatusError); ok {
		return statusMessage(se.Code)
	}
	msg := err.Error()
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Err != nil {
		msg = strings.Replace(msg, ue.Error(), ue.Op+": "+ue.Err.Error(), 1)
	}
	if strings.ContainsAny(msg, "\t\n\r") { // one line in every summary
		msg = strings.Join(strings.Fields(msg), " ")
	}
	return cutMessage(msg)
}

// cutMessage cuts msg to MaxErrorMessageLen bytes at a character
// boundary, ending it with "…".
func cutMessage(msg string) string {
	if len(msg) <= MaxErrorMessageLen {
		return msg
	}
	const ellipsis = "…"
	end := MaxErrorMessageLen - len(ellipsis)
	for end > 0 && !utf8.RuneStart(msg[end]) {
		end--
	}
	return strings.Clone(msg[:end]) + ellipsis
}
