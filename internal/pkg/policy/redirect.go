package policy

import (
	"fmt"
	"net/http"

	"github.com/forgeload/forgeload/internal/pkg/redact"
)

// MaxRedirects is how many redirects in a row [Policy.CheckRedirect]
// follows: net/http's own limit.
const MaxRedirects = 10

// CheckRedirect is an [http.Client] CheckRedirect function that applies the
// policy to every hop: a redirect's new URL is checked with
// [Policy.CheckURL] (host-name rules, the forge, the addresses it resolves
// to, the allow-list) before the client follows it. The dial-time check
// alone cannot do this: it sees addresses, not names, and with an
// allow-list of host names it trusts every address the job's own targets
// were allowed to reach. A refusal fails the request with an error that
// names the new host and wraps the [Violation].
func (p *Policy) CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return fmt.Errorf("stopped after %d redirects", MaxRedirects)
	}
	if err := p.CheckURL(req.Context(), req.URL.String()); err != nil {
		from := ""
		if len(via) > 0 {
			from = " from " + redact.URL(via[len(via)-1].URL.String())
		}
		return fmt.Errorf("redirect%s to host %q refused: %w", from, req.URL.Hostname(), err)
	}
	return nil
}
