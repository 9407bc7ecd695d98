package config

import (
	"fmt"
	"strings"
	"unicode"
)

// Label schemas.
const (
	// SchemaHost runs the job's steps on the host.
	SchemaHost = "host"
	// SchemaDocker runs the job in a container; Arg is the image.
	SchemaDocker = "docker"
)

// Label is one parsed runner label.
type Label struct {
	// Name is what the forge matches against runs-on.
	Name string
	// Schema is SchemaHost or SchemaDocker.
	Schema string
	// Arg is the schema's argument: the image for SchemaDocker, else "".
	Arg string
}

// ParseLabel parses a label of the form name[:schema[:arg]]. A bare name
// means the host schema. The docker schema needs an image, written with or
// without a leading "//" (ubuntu:docker://node:20). A schema other than host
// or docker makes the whole string an opaque host label, as in Gitea's
// runner ("pool:abc" is the label named "pool:abc"). Surrounding spaces are
// trimmed; spaces inside are an error.
func ParseLabel(s string) (Label, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Label{}, fmt.Errorf("parse label: the label is empty (want name[:schema[:arg]], e.g. %s or ubuntu:docker://node:20)", DefaultLabel)
	}
	if strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return Label{}, fmt.Errorf("parse label %q: it contains a space; remove it or use - instead", s)
	}
	name, rest, hasSchema := strings.Cut(s, ":")
	if name == "" {
		return Label{}, fmt.Errorf("parse label %q: the name before the first ':' is empty (want name[:schema[:arg]])", s)
	}
	if !hasSchema {
		return Label{Name: name, Schema: SchemaHost}, nil
	}
	schema, arg, _ := strings.Cut(rest, ":")
	switch schema {
	case SchemaHost:
		if arg != "" {
			return Label{}, fmt.Errorf("parse label %q: the host schema takes no argument (want %s:host)", s, name)
		}
		return Label{Name: name, Schema: SchemaHost}, nil
	case SchemaDocker:
		img := strings.TrimPrefix(arg, "//")
		if img == "" {
			return Label{}, fmt.Errorf("parse label %q: the docker schema needs an image (want e.g. %s:docker://node:20)", s, name)
		}
		return Label{Name: name, Schema: SchemaDocker, Arg: img}, nil
	default:
		return Label{Name: s, Schema: SchemaHost}, nil
	}
}

// LabelNames returns the names of labels, which is what the forge is told,
// in order and without duplicates. A label that does not parse contributes
// the text before its first ':'; validate labels with [ParseLabel] first.
func LabelNames(labels []string) []string {
	names := make([]string, 0, len(labels))
	seen := map[string]bool{}
	for _, s := range labels {
		name := strings.TrimSpace(s)
		if l, err := ParseLabel(s); err == nil {
			name = l.Name
		} else {
			name, _, _ = strings.Cut(name, ":")
		}
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		names = append(names, name)
	}
	return names
}
