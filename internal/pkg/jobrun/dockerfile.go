package jobrun

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// maxDockerfileBytes bounds the Dockerfile of a Docker action.
const maxDockerfileBytes = 1 << 20

// dockerfile is a Docker action's Dockerfile, read as far as the runner
// checks it before the Engine builds it: its instructions, the stages it
// names, and the images from outside it that it builds on (FROM, COPY
// --from), each of which must be allowed before the build, and which the
// Dockerfile given to the Engine names by id (see rewrite), so that the
// build itself pulls nothing.
type dockerfile struct {
	name   string   // the file, for messages
	lines  []string // the file's lines
	images []imageUse
}

// imageUse is one image a Dockerfile takes from outside itself.
type imageUse struct {
	ref string // the image, its ARGs substituted
	// first and last are the instruction's lines (0-based; last > first
	// when it continues over several), line its 1-based first line.
	first, last, line int
	// instr is the instruction (FROM or COPY); before and after are its
	// text around the image reference, for rewrite.
	instr, before, after string
}

// instruction is one logical line of a Dockerfile.
type instruction struct {
	first, last int    // its lines, 0-based
	cmd         string // upper-case: FROM, RUN, ...
	args        string // the rest, continuations joined
}

var (
	directiveRe = regexp.MustCompile(`^#\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$`)
	// autoPlatformRe matches --platform=$BUILDPLATFORM and
	// $TARGETPLATFORM, which BuildKit defines.
	autoPlatformRe = regexp.MustCompile(`^\$(\{(BUILD|TARGET)PLATFORM\}|(BUILD|TARGET)PLATFORM)$`)
)

// parseDockerfile reads a Dockerfile's instructions as Docker's parser
// does: parser directives (escape=) first, comments, and lines continued
// with the escape character. It checks its FROM, ARG, COPY --from and
// ADD instructions; what else it holds is for the Engine's builder to
// judge. name is the file in messages.
func parseDockerfile(name string, data []byte) (*dockerfile, error) {
	d := &dockerfile{name: name, lines: strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")}
	instrs, err := d.instructions()
	if err != nil {
		return nil, err
	}
	args := map[string]*string{} // the ARGs before the first FROM: nil, no default
	stages := map[string]bool{}
	nstages := 0
	for _, in := range instrs {
		switch in.cmd {
		case "ARG":
			if nstages == 0 {
				globalArgs(in.args, args)
			}
		case "FROM":
			err = d.from(in, args, stages)
			nstages++
		case "COPY":
			err = d.copyFrom(in, stages, nstages)
		case "ADD":
			err = d.add(in)
		}
		if err != nil {
			return nil, err
		}
	}
	if nstages == 0 {
		return nil, fmt.Errorf("%s: no FROM instruction; a Dockerfile starts its image with FROM", name)
	}
	return d, nil
}

// instructions splits the file into logical lines.
func (d *dockerfile) instructions() ([]instruction, error) {
	escape := byte('\\')
	i := 0
	for ; i < len(d.lines); i++ {
		m := directiveRe.FindStringSubmatch(d.lines[i])
		if m == nil {
			break
		}
		if strings.EqualFold(m[1], "escape") {
			if m[2] != "\\" && m[2] != "`" {
				return nil, fmt.Errorf("%s:%d: escape=%s: the escape character is \\ or `", d.name, i+1, m[2])
			}
			escape = m[2][0]
		}
	}
	var out []instruction
	var cur *instruction
	var text strings.Builder
	for ; i < len(d.lines); i++ {
		l := strings.TrimLeft(d.lines[i], " \t")
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			continue // as Docker's parser: comments and empty lines, in a continuation too
		}
		if cur == nil {
			cur = &instruction{first: i}
			text.Reset()
		}
		t := strings.TrimRight(l, " \t")
		if t != "" && t[len(t)-1] == escape {
			text.WriteString(t[:len(t)-1])
			text.WriteByte(' ')
			continue
		}
		text.WriteString(t)
		cur.last = i
		cmd, rest, _ := strings.Cut(strings.TrimSpace(text.String()), " ")
		cur.cmd, cur.args = strings.ToUpper(cmd), strings.TrimSpace(rest)
		out = append(out, *cur)
		cur = nil
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the instruction continues past the file's end (a line ends with %c); remove the escape at its end", d.name, cur.first+1, escape)
	}
	return out, nil
}

// globalArgs adds the ARGs declared by an ARG instruction before the
// first FROM, which FROM lines may use, with their defaults.
func globalArgs(s string, args map[string]*string) {
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			args[k] = nil
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		args[k] = &v
	}
}

// splitFlags splits an instruction's arguments into its leading --flags
// and the rest, as written.
func splitFlags(s string) (flags []string, rest string) {
	rest = strings.TrimSpace(s)
	for strings.HasPrefix(rest, "--") {
		f, r, _ := strings.Cut(rest, " ")
		flags = append(flags, f)
		rest = strings.TrimSpace(r)
	}
	return flags, rest
}

// from checks a FROM instruction: FROM [--platform=p] image [AS name].
// An image that is neither scratch nor an earlier stage is one from
// outside.
func (d *dockerfile) from(in instruction, args map[string]*string, stages map[string]bool) error {
	at := fmt.Sprintf("%s:%d: FROM", d.name, in.first+1)
	flags, rest := splitFlags(in.args)
	var kept []string
	for _, f := range flags {
		k, v, _ := strings.Cut(f, "=")
		if k != "--platform" {
			return fmt.Errorf("%s: %s is not a flag of FROM (only --platform is)", at, k)
		}
		if autoPlatformRe.MatchString(v) {
			// BuildKit's own ARGs, which the classic builder lacks: the
			// build and target platform are the Engine's, whose variant
			// of the image the pull policy made present.
			continue
		}
		p, err := expandArgs(v, args)
		if err != nil {
			return fmt.Errorf("%s --platform: %w", at, err)
		}
		kept = append(kept, "--platform="+p)
	}
	words := strings.Fields(rest)
	if len(words) != 1 && (len(words) != 3 || !strings.EqualFold(words[1], "as")) {
		return fmt.Errorf("%s %s: want FROM [--platform=...] image [AS name]", at, rest)
	}
	ref, err := expandArgs(words[0], args)
	if err != nil {
		return fmt.Errorf("%s %s: %w", at, words[0], err)
	}
	if ref == "" {
		return fmt.Errorf("%s %s: names no image", at, words[0])
	}
	internal := strings.EqualFold(ref, "scratch") || stages[strings.ToLower(ref)]
	if len(words) == 3 {
		stages[strings.ToLower(words[2])] = true
	}
	if internal {
		return nil
	}
	d.images = append(d.images, imageUse{
		ref: ref, first: in.first, last: in.last, line: in.first + 1, instr: "FROM",
		before: strings.TrimSpace("FROM " + strings.Join(kept, " ")), after: strings.TrimSpace(strings.Join(words[1:], " ")),
	})
	return nil
}

// copyFrom checks COPY --from=x: x is a stage (by name or index) or an
// image from outside, which must not need ARGs.
func (d *dockerfile) copyFrom(in instruction, stages map[string]bool, nstages int) error {
	flags, rest := splitFlags(in.args)
	for i, f := range flags {
		k, v, _ := strings.Cut(f, "=")
		if k != "--from" {
			continue
		}
		at := fmt.Sprintf("%s:%d: COPY --from=%s", d.name, in.first+1, v)
		if strings.Contains(v, "$") {
			return fmt.Errorf("%s: an image named through a variable cannot be checked before the build; name the stage or image as it is", at)
		}
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < nstages || stages[strings.ToLower(v)] {
			return nil
		}
		if v == "" {
			return fmt.Errorf("%s: names no stage or image", at)
		}
		others := append(append([]string{}, flags[:i]...), flags[i+1:]...)
		d.images = append(d.images, imageUse{
			ref: v, first: in.first, last: in.last, line: in.first + 1, instr: "COPY --from",
			before: "COPY --from=", after: strings.TrimSpace(strings.Join(others, " ") + " " + rest),
		})
	}
	return nil
}

// add refuses ADD of a URL: the Engine fetches it itself, from the
// runner's host, whatever network the build has.
func (d *dockerfile) add(in instruction) error {
	_, rest := splitFlags(in.args)
	var words []string
	if strings.HasPrefix(rest, "[") {
		if err := json.Unmarshal([]byte(rest), &words); err != nil {
			words = strings.Fields(rest)
		}
	} else {
		words = strings.Fields(rest)
	}
	for i, w := range words {
		if i < len(words)-1 && strings.Contains(w, "://") {
			return fmt.Errorf("%s:%d: ADD %s: a URL would be fetched by the Docker Engine itself, from the runner's host and outside the build's network; fetch it in a RUN instruction instead (the build has a network only where the runner's admin sets container.allow_build_network)", d.name, in.first+1, w)
		}
	}
	return nil
}

var (
	argRefRe  = regexp.MustCompile(`\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)
	argNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)
)

// expandArgs substitutes $NAME, ${NAME}, ${NAME:-word} and ${NAME:+word}
// in s with the default values of the ARGs before the first FROM: the
// runner passes no --build-arg, so a default is the value. What cannot
// be resolved so is an error saying why.
func expandArgs(s string, args map[string]*string) (string, error) {
	var err error
	out := argRefRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := argRefRe.FindStringSubmatch(m)
		name, op, word := sub[2], "", ""
		if name == "" {
			id := argNameRe.FindString(sub[1])
			name, op = id, sub[1][len(id):]
			if len(op) >= 2 {
				op, word = op[:2], op[2:]
			}
		}
		v, declared := args[name]
		set := v != nil && *v != ""
		switch {
		case err != nil:
		case name == "" || op != "" && op != ":-" && op != ":+":
			err = fmt.Errorf("${%s} is not a substitution this runner resolves (only $NAME, ${NAME}, ${NAME:-default}, ${NAME:+word})", sub[1])
		case strings.Contains(word, "$") || v != nil && strings.Contains(*v, "$"):
			err = fmt.Errorf("the value of $%s uses another variable, which this runner does not resolve; write the image's name out", name)
		case op == ":-" && !set:
			return word
		case op == ":+" && set:
			return word
		case op == ":+":
			return ""
		case !declared:
			err = fmt.Errorf("$%s is not an ARG declared before the first FROM; declare it there with a default (ARG %s=...)", name, name)
		case v == nil:
			err = fmt.Errorf("ARG %s has no default, and this runner passes no --build-arg; give it a default (ARG %s=image:tag)", name, name)
		default:
			return *v
		}
		return ""
	})
	if err == nil && strings.Contains(out, "$") {
		err = fmt.Errorf("%q has a $ this runner cannot resolve", s)
	}
	return out, err
}

// rewrite returns the Dockerfile with each image from outside named by
// the id ids gives it, each such instruction on its first line and its
// continuation lines left empty, so that the builder's line numbers are
// the file's.
func (d *dockerfile) rewrite(ids map[string]string) []byte {
	lines := append([]string{}, d.lines...)
	for _, u := range d.images {
		l := u.before
		if u.instr == "FROM" {
			l += " "
		}
		l += ids[u.ref]
		if u.after != "" {
			l += " " + u.after
		}
		lines[u.first] = l
		for k := u.first + 1; k <= u.last; k++ {
			lines[k] = ""
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

// checkOnBuild checks the ONBUILD triggers of a base image, which a build
// FROM it runs as if the Dockerfile had them: an ADD of a URL or a COPY
// --from of an image would reach past what the runner checked.
func checkOnBuild(triggers []string) error {
	for _, tr := range triggers {
		d, err := parseDockerfile("ONBUILD", []byte("FROM scratch\n"+strings.ReplaceAll(tr, "\n", " ")+"\n"))
		if err == nil && len(d.images) > 0 {
			err = fmt.Errorf("COPY --from=%s takes an image the runner has not checked", d.images[0].ref)
		}
		if err != nil {
			return fmt.Errorf("its ONBUILD %s cannot run in a build here (%w); build on an image without it", tr, err)
		}
	}
	return nil
}
