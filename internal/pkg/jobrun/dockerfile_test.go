package jobrun

import (
	"slices"
	"strings"
	"testing"
)

// TestParseDockerfileImages: the images a Dockerfile takes from outside
// are found through multi-stage builds, --platform, ARG defaults,
// continuations, the escape directive and COPY --from; stages and
// scratch are not images.
func TestParseDockerfileImages(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, doc string
		want      []string
	}{
		{"one", "FROM alpine:3\nRUN echo\n", []string{"alpine:3"}},
		{"lower case, comments", "# a comment\nfrom  alpine:3  as  build\n", []string{"alpine:3"}},
		{"scratch", "FROM scratch\nCOPY x /x\n", nil},
		{"multi-stage", "FROM golang:1 AS build\nRUN go build\nFROM debian:12\nCOPY --from=build /x /x\nCOPY --from=0 /y /y\n", []string{"golang:1", "debian:12"}},
		{"stage used as base", "FROM alpine:3 AS base\nFROM base\nFROM BASE AS two\n", []string{"alpine:3"}},
		{"platform", "FROM --platform=linux/amd64 alpine:3\n", []string{"alpine:3"}},
		{"BuildKit's platform args", "FROM --platform=$BUILDPLATFORM golang:1 AS b\nFROM --platform=${TARGETPLATFORM} debian:12\n", []string{"golang:1", "debian:12"}},
		{"arg default", "ARG BASE=alpine:3\nARG TAG=\"12\"\nFROM $BASE\nFROM debian:${TAG}\nFROM busybox:${NONE:-1}\n", []string{"alpine:3", "debian:12", "busybox:1"}},
		{"arg default ignored when set", "ARG V=2\nFROM busybox:${V:-1}${V:+-x}\n", []string{"busybox:2-x"}},
		{"continuation", "FROM \\\n  alpine:3 \\\n  AS b\nRUN a \\\n\n  # comment\n  b\n", []string{"alpine:3"}},
		{"escape directive", "# escape=`\nFROM `\n  alpine:3\n", []string{"alpine:3"}},
		{"copy from an image", "FROM scratch\nCOPY --chown=1 --from=busybox:1 /bin/busybox /bb\n", []string{"busybox:1"}},
		{"arg after FROM is not global", "FROM alpine:3\nARG X=y\n", []string{"alpine:3"}},
	} {
		d, err := parseDockerfile("Dockerfile", []byte(tt.doc))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var got []string
		for _, u := range d.images {
			got = append(got, u.ref)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: images %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestParseDockerfileRefused: what the runner cannot check before the
// build is an error naming the file, the line, the instruction and the
// fix.
func TestParseDockerfileRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, doc, want string }{
		{"no FROM", "RUN echo\n", "Dockerfile: no FROM instruction"},
		{"undeclared arg", "FROM $BASE\n", "Dockerfile:1: FROM $BASE: $BASE is not an ARG declared before the first FROM"},
		{"arg without default", "ARG BASE\nFROM ${BASE}\n", "Dockerfile:2: FROM ${BASE}: ARG BASE has no default, and this runner passes no --build-arg"},
		{"arg of arg", "ARG A=x\nARG B=$A\nFROM $B\n", "Dockerfile:3: FROM $B: the value of $B uses another variable"},
		{"other substitution", "ARG A=x\nFROM ${A%x}\n", "is not a substitution this runner resolves"},
		{"platform arg", "FROM --platform=$HOSTPLATFORM alpine:3\n", "Dockerfile:1: FROM --platform: $HOSTPLATFORM is not an ARG declared"},
		{"bad flag", "FROM --pull alpine:3\n", "Dockerfile:1: FROM: --pull is not a flag of FROM"},
		{"bad shape", "FROM a b\n", "Dockerfile:1: FROM a b: want FROM [--platform=...] image [AS name]"},
		{"empty image", "ARG A=\"\"\nFROM $A\n", "Dockerfile:2: FROM $A: names no image"},
		{"copy from variable", "FROM scratch\nCOPY --from=$X /a /b\n", "Dockerfile:2: COPY --from=$X: an image named through a variable cannot be checked"},
		{"add url", "FROM scratch\nADD https://example.com/x.tgz /x\n", "Dockerfile:2: ADD https://example.com/x.tgz: a URL would be fetched by the Docker Engine itself"},
		{"add url json", "FROM scratch\nADD [\"http://169.254.169.254/\", \"/x\"]\n", "ADD http://169.254.169.254/: a URL"},
		{"open continuation", "FROM alpine:3\nRUN a \\\n", "Dockerfile:2: the instruction continues past the file's end"},
		{"bad escape", "# escape=x\nFROM a\n", "Dockerfile:1: escape=x"},
	} {
		_, err := parseDockerfile("Dockerfile", []byte(tt.doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

// TestDockerfileRewrite: the Dockerfile the Engine builds names each
// image from outside by its id, on the instruction's first line, and
// keeps every other line where it was.
func TestDockerfileRewrite(t *testing.T) {
	t.Parallel()
	doc := "ARG B=alpine:3\nFROM --platform=linux/amd64 \\\n  $B AS build\nRUN echo \\\n  hi\nFROM scratch\nCOPY --from=busybox:1 --chown=1 /bin/busybox /bb\nCOPY --from=build /x /x\nFROM --platform=$BUILDPLATFORM alpine:3\n"
	d, err := parseDockerfile("Dockerfile", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got := string(d.rewrite(map[string]string{"alpine:3": "sha256:aaa", "busybox:1": "sha256:bbb"}))
	want := "ARG B=alpine:3\nFROM --platform=linux/amd64 sha256:aaa AS build\n\nRUN echo \\\n  hi\nFROM scratch\nCOPY --from=sha256:bbb --chown=1 /bin/busybox /bb\nCOPY --from=build /x /x\nFROM sha256:aaa\n"
	if got != want {
		t.Errorf("rewrite:\n%s\nwant:\n%s", got, want)
	}
}

// FuzzParseDockerfile: any bytes parse or fail with an error naming the
// file; never a panic; and the rewritten file has the same lines and
// parses to the same stages with the images replaced.
func FuzzParseDockerfile(f *testing.F) {
	for _, s := range []string{
		"FROM alpine:3\n", "ARG A=b\nFROM $A AS x\nFROM x\nCOPY --from=y:1 a b\n", "# escape=`\nFROM `\n a\n",
		"FROM ${A:-b}\n", "ADD [\"a://\", \"b\"]\n", "FROM a \\", "FROM --platform=${P:+x} a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseDockerfile("f/Dockerfile", data)
		if err != nil {
			if !strings.Contains(err.Error(), "f/Dockerfile") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		ids := map[string]string{}
		for _, u := range d.images {
			ids[u.ref] = "sha256:0123"
		}
		out := d.rewrite(ids)
		if n, m := len(d.lines), strings.Count(string(out), "\n")+1; n != m {
			t.Fatalf("rewrite has %d lines, the file %d", m, n)
		}
		again, err := parseDockerfile("f/Dockerfile", out)
		if err != nil {
			t.Fatalf("the rewritten file does not parse: %v\n%s", err, out)
		}
		for _, u := range again.images {
			if u.ref != "sha256:0123" {
				t.Fatalf("the rewritten file takes %q from outside:\n%s", u.ref, out)
			}
		}
	})
}

// TestCheckOnBuild: a base image's ONBUILD triggers run in a build FROM
// it, so those that would fetch a URL or take an unchecked image are
// refused, naming the trigger; the others pass.
func TestCheckOnBuild(t *testing.T) {
	t.Parallel()
	if err := checkOnBuild([]string{"RUN echo hi", "ADD . /app", "COPY --from=0 /a /b"}); err != nil {
		t.Errorf("harmless triggers: %v", err)
	}
	for _, tr := range []string{"ADD https://example.com/x /x", "COPY --from=alpine:3 /a /b"} {
		if err := checkOnBuild([]string{"RUN true", tr}); err == nil || !strings.Contains(err.Error(), "its ONBUILD "+tr+" cannot run in a build here") {
			t.Errorf("checkOnBuild(%q) = %v, want a refusal naming it", tr, err)
		}
	}
}
