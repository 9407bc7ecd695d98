package strictyaml_test

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/load/spec"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// parsers are the three parsers of user YAML; each returns the first line
// of its error.
var parsers = map[string]func(doc string) error{
	"config": func(doc string) error {
		_, err := config.Parse("f.yaml", []byte(doc), func(string) string { return "" })
		return err
	},
	"spec": func(doc string) error {
		_, err := spec.Parse("f.yaml", []byte(doc))
		return err
	},
	"workflow": func(doc string) error {
		_, err := workflow.Parse([]byte(doc))
		return err
	},
}

// located splits an error of any of the parsers into its line and the rest.
var located = regexp.MustCompile(`^(?:f\.yaml:|workflow line )(\d+): (.*)$`)

// TestParsersShareWording feeds the same mistakes to the daemon config,
// load-config and workflow parsers and checks that each reports it at the
// same line in the same words.
func TestParsersShareWording(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		docs map[string]string // per parser; "" for all
		line string
		msg  *regexp.Regexp // the message after the location
	}{
		{"syntax error", map[string]string{"": "a: 1\nb: 2\n- c\n"}, "3",
			regexp.MustCompile(`^invalid YAML: did not find expected key( \(.*\))?$`)},
		{"unclosed list", map[string]string{"": "a: 1\nb: [1\nc: 2\n"}, "2",
			regexp.MustCompile(`^invalid YAML: did not find expected ',' or '\]'( \(.*\))?$`)},
		{"unknown key", map[string]string{"config": "\nrunerr: {}\n", "spec": "\nrat: 1\n", "workflow": "\njobz: {}\n"}, "2",
			regexp.MustCompile(`^unknown key "[a-z]+"; did you mean "[a-z]+"\? known keys: [a-z_-]+(, [a-z_-]+)+$`)},
		{"duplicate key", map[string]string{"config": "log: {}\nlog: {}\n", "spec": "rate: 1\nrate: 2\n", "workflow": "name: a\nname: b\n"}, "2",
			regexp.MustCompile(`^[a-z]+: set twice \(first on line 1\); keep one$`)},
		{"kind", map[string]string{"config": "log:\n  level: [a]\n", "spec": "rate: 1\ntarget: [a]\n", "workflow": "on: push\nname: [a]\n"}, "2",
			regexp.MustCompile(`^[a-z.]+: want .+, got a list$`)},
		{"key not a name", map[string]string{"": "? [a]\n: 1\n"}, "1",
			regexp.MustCompile(`^a key must be a plain name, got a list$`)},
		{"merge key", map[string]string{"": "<<: {a: 1}\n"}, "1",
			regexp.MustCompile(`^merge keys \(<<\) are not supported; write the keys out$`)},
	} {
		for name, parse := range parsers {
			doc, ok := tt.docs[name]
			if !ok {
				doc = tt.docs[""]
			}
			err := parse(doc)
			if err == nil {
				t.Errorf("%s: %s parsed %q", tt.name, name, doc)
				continue
			}
			first, _, _ := strings.Cut(err.Error(), "\n")
			m := located.FindStringSubmatch(first)
			if m == nil || m[1] != tt.line || !tt.msg.MatchString(m[2]) {
				t.Errorf("%s: %s error\n  %s\nwant line %s and a message matching %s", tt.name, name, first, tt.line, tt.msg)
			}
			if known := strings.SplitN(m[2]+"known keys: ", "known keys: ", 2)[1]; known != "" {
				if keys := strings.Split(known, ", "); !slices.IsSorted(keys) {
					t.Errorf("%s: %s lists the known keys unsorted: %s", tt.name, name, known)
				}
			}
		}
	}
	var pe *workflow.ParseError
	if !errors.As(parsers["workflow"]("a: [\n"), &pe) {
		t.Errorf("workflow syntax error is not a *workflow.ParseError")
	}
	var se *spec.Error
	if !errors.As(parsers["spec"]("a: [\n"), &se) {
		t.Errorf("spec syntax error is not a *spec.Error")
	}
}
