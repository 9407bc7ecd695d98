package summary

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestSummaryListsTopErrorMessages: the summary lists the most frequent
// TopErrorMessages (endpoint, message) pairs, equal counts by endpoint
// name, and counts the failures of every other message (past the engine's
// cap, or past the top) so that listed and other add up to the errors.
// The text, Markdown and JSON writers show them.
func TestSummaryListsTopErrorMessages(t *testing.T) {
	t.Parallel()
	r := &load.Result{Endpoints: []load.EndpointStats{{Name: "home"}, {Name: "api"}}}
	r.Endpoints[0].Messages.Add("Get: dial tcp 127.0.0.1:1: connect: connection refused", 200)
	r.Endpoints[1].Messages.Add("unexpected status 503", 200)
	for i := range 200 { // a distinct message every time: past the cap, Other
		r.Endpoints[i%2].Messages.Add(fmt.Sprintf("order %d not found", i), 1)
	}
	r.Requests, r.Errors = 2000, 600
	for i := range r.Endpoints {
		r.Endpoints[i].Requests, r.Endpoints[i].Errors = 1000, 300
	}
	s := Of(r, nil)
	var listed int64
	for _, m := range s.ErrorMessages {
		listed += m.Count
	}
	if len(s.ErrorMessages) != TopErrorMessages || listed+s.ErrorMessagesOther != 600 {
		t.Fatalf("%d messages listed (%d failures) + %d other: want %d listed, adding up to 600 errors:\n%+v",
			len(s.ErrorMessages), listed, s.ErrorMessagesOther, TopErrorMessages, s.ErrorMessages)
	}
	want := []MessageCount{
		{Endpoint: "api", Message: "unexpected status 503", Count: 200},
		{Endpoint: "home", Message: "Get: dial tcp 127.0.0.1:1: connect: connection refused", Count: 200},
	}
	for i, w := range want {
		if s.ErrorMessages[i] != w {
			t.Errorf("message %d = %+v, want %+v", i, s.ErrorMessages[i], w)
		}
	}
	var text, md, js bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		for _, w := range []string{"Error messages (the 10 most frequent, of 600 failures)", "Get: dial tcp 127.0.0.1:1: connect: connection refused", "unexpected status 503", "(other messages)"} {
			if !strings.Contains(out, w) {
				t.Errorf("the %s summary lacks %q:\n%s", name, w, out)
			}
		}
	}
	var back Summary
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.ErrorMessages) != TopErrorMessages || back.ErrorMessages[0] != want[0] || back.ErrorMessagesOther != s.ErrorMessagesOther {
		t.Errorf("JSON error messages = %+v other %d, want %+v first and other %d", back.ErrorMessages, back.ErrorMessagesOther, want[0], s.ErrorMessagesOther)
	}
}
