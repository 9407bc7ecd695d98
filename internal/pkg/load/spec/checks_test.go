package spec

import (
	"strings"
	"testing"
)

func TestChecksParse(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(base+`checks:
  - status: 200
  - status: [200, 201]
  - body_not_contains: ' error '
  - json: $.items[0].id
    exists: false
  - header: content-type
    matches: '^application/json'
checks_max_body: 1024
endpoints:
  - name: a
    checks: [{json: $.id, equals: 7}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Checks) != 5 || len(c.Checks[0].Status) != 1 || len(c.Checks[1].Status) != 2 || *c.Checks[2].BodyNotContains != " error " ||
		*c.Checks[3].Exists || *c.Checks[4].Matches != "^application/json" || c.ChecksMaxBody != 1024 || *c.Endpoints[0].Checks[0].Equals != "7" {
		t.Errorf("parsed checks %+v, endpoint %+v, max body %d", c.Checks, c.Endpoints[0].Checks, c.ChecksMaxBody)
	}
	s, err := c.CheckSuite()
	if err != nil || len(s.All()) != 6 || s.MaxBody() != 1024 {
		t.Errorf("CheckSuite = %v checks, max body %d, %v; want 6 and 1024", len(s.All()), s.MaxBody(), err)
	}
}

// TestChecksErrorsNameTheKey: each bad check is refused at its file:line,
// naming its key and the fix, all at once.
func TestChecksErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	_, err := Parse("c.yaml", []byte(base+"checks:\n  - status: [200, \"ok\"]\n  - body_contain: x\n"))
	for _, want := range []string{
		`c.yaml:5: checks[0].status[1]: "ok" is not a status code or a list of them`,
		`c.yaml:6: checks[1]: unknown key "body_contain"; did you mean "body_contains"?`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse error:\n%v\nwant %q", err, want)
		}
	}
	src := base + `checks:
  - status: 200
  - status: 201
  - json: $.a
    matches: x
  - header: X
    matches: '('
  - {}
  - status: 200
    body_contains: ok
checks_max_body: -5
`
	c, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	for _, want := range []string{
		"c.yaml:8: checks[2].matches: only a header check takes matches",
		"c.yaml:10: checks[3].matches: \"(\" is not a regular expression",
		"checks[4]: a check needs one of status",
		"checks[5]: status and body_contains are set in one check: write each as its own list item",
		"checks_max_body: -5 is negative",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error:\n%v\nwant %q", err, want)
		}
	}
}

// TestChecksInline: a step's with: (or a flag) gives checks as YAML text,
// which replaces the file's list.
func TestChecksInline(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(base+"checks: [{status: 200}, {status: 201}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Override(map[string]string{"checks": "- body_not_contains: error\n", "checks_max_body": "2048"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Checks) != 1 || c.Checks[0].BodyNotContains == nil || *c.Checks[0].BodyNotContains != "error" || c.ChecksMaxBody != 2048 {
		t.Errorf("checks after override = %+v, max body %d", c.Checks, c.ChecksMaxBody)
	}
	err = c.Override(map[string]string{"checks": "- json: $.a\n  matches: x\n"})
	if err == nil {
		err = c.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "inline: checks[0].matches: only a header check takes matches") {
		t.Errorf("a bad inline check = %v, want it refused as inline, naming the key", err)
	}
}

// TestChecksThresholdNeedsChecks: a checks threshold that could only fail
// for want of data is refused before the run.
func TestChecksThresholdNeedsChecks(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		base + "thresholds: ['checks:rate > 99%']\n": `threshold "checks:rate > 99%" needs response checks, and the config has none`,
	} {
		c, err := Parse("c.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%q) = %v, want %q", src, err, want)
		}
	}
	c, err := Parse("c.yaml", []byte(base+"endpoints: [{name: a, checks: [{status: 200}]}]\nthresholds: ['checks:rate > 99%']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("an endpoint's checks and a checks threshold: %v", err)
	}
	// A distributed run ships its check counts: the threshold is judged
	// on the merged counts as on one host.
	c, err = Parse("c.yaml", []byte(base+"checks: [{status: 200}]\ndistributed: {workers: 2}\nthresholds: ['checks:rate > 99%']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("checks:rate in a distributed run: %v", err)
	}
}
