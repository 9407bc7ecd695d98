package summary

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TopErrorMessages is how many distinct error messages a [Summary] lists,
// most frequent first; the rest are counted in ErrorMessagesOther.
const TopErrorMessages = 10

// MessageCount is one row of a [Summary]'s error messages: the failures
// of one endpoint with one message.
type MessageCount struct {
	Endpoint string `json:"endpoint"`
	Message  string `json:"message"`
	Count    int64  `json:"count"`
}

// topMessages are r's TopErrorMessages most frequent (endpoint, message)
// pairs, most frequent first, and the failures of every other message.
func topMessages(r *load.Result) (top []MessageCount, other int64) {
	var all []MessageCount
	for i := range r.Endpoints {
		e := &r.Endpoints[i]
		other += e.Messages.Other
		for msg, n := range e.Messages.Counts {
			all = append(all, MessageCount{Endpoint: e.Name, Message: msg, Count: n})
		}
	}
	slices.SortFunc(all, func(a, b MessageCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Endpoint, b.Endpoint), strings.Compare(a.Message, b.Message))
	})
	if len(all) > TopErrorMessages {
		for _, m := range all[TopErrorMessages:] {
			other += m.Count
		}
		all = all[:TopErrorMessages]
	}
	return all, other
}

// messagesTitle heads the error messages of the text and Markdown
// summaries.
func messagesTitle(s *Summary) string {
	return "Error messages (the " + strconv.Itoa(len(s.ErrorMessages)) + " most frequent, of " + strconv.FormatInt(s.Errors, 10) + " failures)"
}

// otherMessages names the failures of the messages not listed.
const otherMessages = "(other messages)"

// writeMessagesText writes the error messages section of the text
// summary: count, endpoint and message, one a line.
func writeMessagesText(w io.Writer, s *Summary) {
	if len(s.ErrorMessages) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", messagesTitle(s))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, m := range s.ErrorMessages {
		fmt.Fprintf(tw, "  %d\t%s\t%s\n", m.Count, m.Endpoint, m.Message)
	}
	if s.ErrorMessagesOther > 0 {
		fmt.Fprintf(tw, "  %d\t\t%s\n", s.ErrorMessagesOther, otherMessages)
	}
	_ = tw.Flush()
}

// writeMessagesMarkdown writes the error messages section of the
// Markdown summary.
func writeMessagesMarkdown(w io.Writer, s *Summary) {
	if len(s.ErrorMessages) == 0 {
		return
	}
	fmt.Fprintf(w, "\n#### %s\n\n", messagesTitle(s))
	fmt.Fprintln(w, "| Count | Endpoint | Message |")
	fmt.Fprintln(w, "|--:|---|---|")
	for _, m := range s.ErrorMessages {
		fmt.Fprintf(w, "| %d | %s | %s |\n", m.Count, mdEscape(m.Endpoint), mdEscape(m.Message))
	}
	if s.ErrorMessagesOther > 0 {
		fmt.Fprintf(w, "| %d | | %s |\n", s.ErrorMessagesOther, otherMessages)
	}
}
