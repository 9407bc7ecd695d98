package strictyaml

import (
	"bytes"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// lineRE matches yaml.v3's "yaml: line N: msg" syntax errors.
var lineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the messages of yaml.v3's parser errors, the ones whose
// line it prints counted from 0. Every other syntax error comes from its
// scanner, whose line it prints counted from 1.
var parserProblems = []string{
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected node content",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// Syntax returns the 1-based line of the syntax error err that yaml.v3
// returned for doc, and its message without the "yaml: line N: " prefix.
// line is 0 when the error carries no position (for example an unknown
// anchor).
//
// yaml.v3 often names the line where the enclosing mapping or list began
// rather than the line of the mistake. Syntax finds the mistake's line as
// the shortest run of doc's first lines that fails with the same message
// (a binary search, so a handful of parses): for a bracket or quote left
// open, that is the line that opened it.
func Syntax(err error, doc []byte) (line int, msg string) {
	text := err.Error()
	m := lineRE.FindStringSubmatch(text)
	if m == nil {
		msg = strings.TrimPrefix(text, "yaml: ")
		if !isParserProblem(msg) {
			return 0, msg
		}
		line = 1 // yaml.v3 leaves out line 0
	} else {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if isParserProblem(msg) {
			line++
		}
	}
	ends := lineEnds(doc)
	// yaml.v3 puts the end of the stream on a line of its own.
	line = max(min(line, len(ends)), 1)
	// The first lines up to the reported one parse, or fail otherwise.
	rest := ends[line-1:]
	i := sort.Search(len(rest), func(i int) bool { return failsWith(doc[:rest[i]], msg) })
	if i < len(rest) {
		line += i
	}
	return line, msg
}

// lineEnds returns, for each line of doc, the offset just past it.
func lineEnds(doc []byte) []int {
	var ends []int
	for off := 0; off < len(doc); {
		n := bytes.IndexByte(doc[off:], '\n')
		if n < 0 {
			off = len(doc)
		} else {
			off += n + 1
		}
		ends = append(ends, off)
	}
	if len(ends) == 0 {
		ends = append(ends, 0)
	}
	return ends
}

// failsWith reports whether prefix fails to parse with the syntax error msg.
func failsWith(prefix []byte, msg string) bool {
	var n yaml.Node
	err := yaml.Unmarshal(prefix, &n)
	if err == nil {
		return false
	}
	got := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		got = m[2]
	}
	return got == msg
}

func isParserProblem(msg string) bool {
	for _, p := range parserProblems {
		if msg == p {
			return true
		}
	}
	return false
}
