package outcome

import (
	"bytes"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/load"
)

// TestWritersShowErrorMessages: the text, Markdown, JSON and HTML writers
// of an outcome all list the run's error messages with their endpoint and
// count; the HTML escapes a message's markup.
func TestWritersShowErrorMessages(t *testing.T) {
	t.Parallel()
	r := result(100, 30)
	r.Endpoints = []load.EndpointStats{{Name: "orders"}}
	r.Endpoints[0].Messages.Add("unexpected status 503", 20)
	r.Endpoints[0].Messages.Add(`parse "<b>body</b>": bad JSON`, 10)
	o := New(Input{Result: r})
	for _, w := range []struct {
		name  string
		write Writer
		want  []string
	}{
		{"text", Text, []string{"Error messages (the 2 most frequent, of 30 failures)", "20  orders  unexpected status 503", `10  orders  parse "<b>body</b>": bad JSON`}},
		{"markdown", Markdown, []string{"| 20 | orders | unexpected status 503 |", `| 10 | orders | parse "&lt;b&gt;body&lt;/b&gt;": bad JSON |`}},
		{"json", JSON, []string{`"error_messages": [`, `"endpoint": "orders"`, `"message": "unexpected status 503"`, `"count": 20`}},
		{"html", HTML, []string{`<tr class="message"><td class="n">20</td><td>orders</td><td><code>unexpected status 503</code></td></tr>`,
			`<code>parse &#34;&lt;b&gt;body&lt;/b&gt;&#34;: bad JSON</code>`}},
	} {
		var b bytes.Buffer
		if err := w.write(o, &b); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		for _, want := range w.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("the %s output lacks %q:\n%s", w.name, want, b.String())
			}
		}
	}
}
