package kubernetes_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/forgeload/forgeload/internal/app/cmd"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/metrics"
)

// namespace is the one every manifest lives in.
const namespace = "forgeload"

// image is the repository part of the image the runner containers use: the
// name docs/install.md builds the Dockerfile as (docker build -t forgeload).
const image = "forgeload"

// object is one Kubernetes object of a manifest, with the file it came
// from.
type object struct {
	file string
	doc  map[string]any
}

func (o object) kind() string { return str(o.doc, "kind") }
func (o object) name() string {
	if n := str(o.doc, "metadata", "name"); n != "" {
		return n
	}
	return str(o.doc, "metadata", "generateName")
}
func (o object) String() string {
	return fmt.Sprintf("%s: %s %s", o.file, o.kind(), o.name())
}

// loadManifests parses every *.yaml file of this directory, document by
// document, failing the test on a parse error or an empty directory.
func loadManifests(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests found (%v)", err)
	}
	var objs []object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if doc == nil {
				continue
			}
			objs = append(objs, object{file: f, doc: doc})
		}
	}
	return objs
}

// get walks doc along keys (map keys only); nil when a key is missing.
func get(doc any, keys ...string) any {
	for _, k := range keys {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = m[k]
	}
	return doc
}

// str returns the string at keys, or "".
func str(doc any, keys ...string) string {
	s, _ := get(doc, keys...).(string)
	return s
}

func list(doc any, keys ...string) []any {
	l, _ := get(doc, keys...).([]any)
	return l
}

// podSpec returns the pod template spec of a workload, or nil.
func podSpec(o object) map[string]any {
	var p any
	switch o.kind() {
	case "StatefulSet", "Deployment", "Job":
		p = get(o.doc, "spec", "template", "spec")
	}
	m, _ := p.(map[string]any)
	return m
}

func TestManifestsHaveRequiredFields(t *testing.T) {
	objs := loadManifests(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind()]++
		if str(o.doc, "apiVersion") == "" || o.kind() == "" || o.name() == "" {
			t.Errorf("%v: apiVersion, kind and metadata.name (or generateName) are required", o)
		}
		if o.kind() != "Namespace" && str(o.doc, "metadata", "namespace") != namespace {
			t.Errorf("%v: metadata.namespace is %q, want %q", o, str(o.doc, "metadata", "namespace"), namespace)
		}
	}
	for _, k := range []string{"Namespace", "Secret", "ConfigMap", "StatefulSet", "Service", "PodDisruptionBudget", "Deployment", "Job"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the manifests", k)
		}
	}
}

func TestWorkloadContainers(t *testing.T) {
	objs := loadManifests(t)
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		containers := append(slices.Clone(list(spec, "initContainers")), list(spec, "containers")...)
		if len(list(spec, "containers")) == 0 {
			t.Errorf("%v: no containers", o)
		}
		for _, c := range containers {
			name := str(c, "name")
			img := str(c, "image")
			if img == "" {
				t.Errorf("%v: container %s has no image", o, name)
			}
			if strings.Contains(img, "redis") {
				continue
			}
			if repo, _, _ := strings.Cut(img, ":"); repo != image {
				t.Errorf("%v: container %s runs image %q, want %s:<tag> (the image docs/install.md builds)", o, name, img, image)
			}
		}
		for _, c := range list(spec, "containers") {
			for _, r := range []string{"cpu", "memory"} {
				if get(c, "resources", "requests", r) == nil {
					t.Errorf("%v: container %s has no resources.requests.%s", o, str(c, "name"), r)
				}
			}
			if get(c, "livenessProbe") == nil || get(c, "readinessProbe") == nil {
				t.Errorf("%v: container %s needs a livenessProbe and a readinessProbe", o, str(c, "name"))
			}
		}
	}
}

// TestProbesAndScrapeMatchTheMetricsServer: the runner containers probe
// /healthz and /readyz on the port named metrics, the metrics server of the
// binary answers both paths and /metrics, that port is the one
// FORGELOAD_METRICS_ADDR listens on, and the pods carry Prometheus scrape
// annotations for it.
func TestProbesAndScrapeMatchTheMetricsServer(t *testing.T) {
	objs := loadManifests(t)
	env := configMapEnv(t, objs)
	_, addrPort, err := net.SplitHostPort(env["FORGELOAD_METRICS_ADDR"])
	if err != nil {
		t.Fatalf("configmap FORGELOAD_METRICS_ADDR %q: %v", env["FORGELOAD_METRICS_ADDR"], err)
	}
	if env["FORGELOAD_METRICS_ENABLED"] != "true" {
		t.Errorf("configmap FORGELOAD_METRICS_ENABLED is %q: the probes need the metrics server", env["FORGELOAD_METRICS_ENABLED"])
	}
	served := servedPaths(t)
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil || o.name() == "forgeload-redis" {
			continue
		}
		ann := get(o.doc, "spec", "template", "metadata", "annotations")
		if str(ann, "prometheus.io/scrape") != "true" || str(ann, "prometheus.io/port") != addrPort || !served[str(ann, "prometheus.io/path")] {
			t.Errorf("%v: pod annotations %v: want prometheus.io/scrape \"true\", prometheus.io/port %q and a prometheus.io/path the metrics server serves", o, ann, addrPort)
		}
		for _, c := range list(spec, "containers") {
			ports := map[string]string{}
			for _, p := range list(c, "ports") {
				ports[str(p, "name")] = fmt.Sprint(get(p, "containerPort"))
			}
			for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
				path := str(c, probe, "httpGet", "path")
				port := fmt.Sprint(get(c, probe, "httpGet", "port"))
				if path != want || !served[path] {
					t.Errorf("%v: %s path %q, want %s (served by the metrics server: %v)", o, probe, path, want, served[path])
				}
				if p, ok := ports[port]; ok {
					port = p
				}
				if port != addrPort {
					t.Errorf("%v: %s port %s, but FORGELOAD_METRICS_ADDR listens on %s", o, probe, port, addrPort)
				}
			}
		}
	}
}

// servedPaths starts the binary's metrics server on 127.0.0.1 and reports
// which of the paths a manifest may name it answers (any status but 404).
func servedPaths(t *testing.T) map[string]bool {
	t.Helper()
	srv := metrics.NewServer("127.0.0.1:0", prometheus.NewRegistry(), nil)
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	}()
	cl := &http.Client{Timeout: 10 * time.Second}
	out := map[string]bool{}
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/nonexistent"} {
		resp, err := cl.Get("http://" + srv.Addr() + p)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		out[p] = resp.StatusCode != http.StatusNotFound
	}
	if out["/nonexistent"] {
		t.Fatal("the metrics server answers any path: the probe check would prove nothing")
	}
	return out
}

// configMapEnv returns the data of the forgeload-config ConfigMap.
func configMapEnv(t *testing.T, objs []object) map[string]string {
	t.Helper()
	for _, o := range objs {
		if o.kind() == "ConfigMap" && o.name() == "forgeload-config" {
			out := map[string]string{}
			for k, v := range get(o.doc, "data").(map[string]any) {
				s, ok := v.(string)
				if !ok {
					t.Errorf("%v: data.%s is %T, want a string (quote it)", o, k, v)
				}
				out[k] = s
			}
			return out
		}
	}
	t.Fatal("no ConfigMap forgeload-config")
	return nil
}

// TestEnvIsKnownToTheConfig: every FORGELOAD_ variable a pod gets is a
// config key's override or a variable forgeload reads elsewhere, and the
// overrides together make a config that validates.
func TestEnvIsKnownToTheConfig(t *testing.T) {
	objs := loadManifests(t)
	known := append(config.EnvNames(), config.OtherEnv...)
	base := configMapEnv(t, objs)
	for name := range base {
		if !slices.Contains(known, name) {
			t.Errorf("configmap: %s is not a variable forgeload reads (config keys: %v)", name, config.EnvNames())
		}
	}
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil || o.name() == "forgeload-redis" {
			continue
		}
		for _, c := range append(slices.Clone(list(spec, "initContainers")), list(spec, "containers")...) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for _, e := range list(c, "env") {
				name := str(e, "name")
				if strings.HasPrefix(name, "FORGELOAD_") && !slices.Contains(known, name) {
					t.Errorf("%v: container %s: %s is not a variable forgeload reads", o, str(c, "name"), name)
				}
				v := str(e, "value")
				if get(e, "valueFrom") != nil {
					v = "forgeload-0" // a pod name
				}
				env[name] = v
			}
			if _, err := config.Parse("pod env", nil, func(k string) string { return env[k] }); err != nil {
				t.Errorf("%v: container %s: its environment does not make a valid config: %v", o, str(c, "name"), err)
			}
		}
	}
}

var flagRE = regexp.MustCompile(`--[a-z][a-z-]*`)

// TestCommandsExist: each runner container's command is a forgeload
// subcommand the binary has, with flags it knows.
func TestCommandsExist(t *testing.T) {
	objs := loadManifests(t)
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil || o.name() == "forgeload-redis" {
			continue
		}
		for _, c := range append(slices.Clone(list(spec, "initContainers")), list(spec, "containers")...) {
			if repo, _, _ := strings.Cut(str(c, "image"), ":"); repo != image {
				continue
			}
			var words []string
			for _, w := range list(c, "command") {
				words = append(words, strings.Fields(fmt.Sprint(w))...)
			}
			i := slices.Index(words, "forgeload")
			if i < 0 || i+1 >= len(words) {
				t.Errorf("%v: container %s: command %q runs no forgeload subcommand", o, str(c, "name"), words)
				continue
			}
			sub := words[i+1]
			var stdout, stderr bytes.Buffer
			if code := cmd.Main(context.Background(), []string{sub, "--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Errorf("%v: container %s: forgeload %s --help exits %d: %s", o, str(c, "name"), sub, code, stderr.String())
				continue
			}
			for _, fl := range flagRE.FindAllString(strings.Join(words[i+2:], " "), -1) {
				if !strings.Contains(stdout.String(), fl+" ") {
					t.Errorf("%v: container %s: forgeload %s has no flag %s", o, str(c, "name"), sub, fl)
				}
			}
		}
	}
}

// TestReferencesResolve: selectors match the pods they select, and the
// ConfigMap, Secret and volumes a pod names exist.
func TestReferencesResolve(t *testing.T) {
	objs := loadManifests(t)
	byKind := map[string][]object{}
	for _, o := range objs {
		byKind[o.kind()] = append(byKind[o.kind()], o)
	}
	exists := func(kind, name string) bool {
		return slices.ContainsFunc(byKind[kind], func(o object) bool { return o.name() == name })
	}
	podLabels := map[string]map[string]any{}
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		labels, _ := get(o.doc, "spec", "template", "metadata", "labels").(map[string]any)
		podLabels[o.name()] = labels
		if sel, ok := get(o.doc, "spec", "selector", "matchLabels").(map[string]any); ok && !subset(sel, labels) {
			t.Errorf("%v: spec.selector %v does not select its own pods %v", o, sel, labels)
		}
		vols := map[string]bool{}
		for _, v := range list(spec, "volumes") {
			vols[str(v, "name")] = true
			if s := str(v, "secret", "secretName"); s != "" && !exists("Secret", s) {
				t.Errorf("%v: volume %s names Secret %s, which no manifest defines", o, str(v, "name"), s)
			}
		}
		for _, t := range list(get(o.doc, "spec"), "volumeClaimTemplates") {
			vols[str(t, "metadata", "name")] = true
		}
		for _, c := range append(slices.Clone(list(spec, "initContainers")), list(spec, "containers")...) {
			for _, m := range list(c, "volumeMounts") {
				if !vols[str(m, "name")] {
					t.Errorf("%v: container %s mounts volume %s, which the pod does not define", o, str(c, "name"), str(m, "name"))
				}
			}
			for _, e := range list(c, "envFrom") {
				if n := str(e, "configMapRef", "name"); n != "" && !exists("ConfigMap", n) {
					t.Errorf("%v: container %s reads ConfigMap %s, which no manifest defines", o, str(c, "name"), n)
				}
			}
		}
	}
	for _, kind := range []string{"Service", "PodDisruptionBudget"} {
		for _, o := range byKind[kind] {
			sel, _ := get(o.doc, "spec", "selector").(map[string]any)
			if kind == "PodDisruptionBudget" {
				sel, _ = get(o.doc, "spec", "selector", "matchLabels").(map[string]any)
			}
			matched := false
			for _, labels := range podLabels {
				matched = matched || subset(sel, labels)
			}
			if len(sel) == 0 || !matched {
				t.Errorf("%v: selector %v selects no pod of the manifests", o, sel)
			}
		}
	}
}

func subset(sel, labels map[string]any) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestInstallDocLinksEveryManifest: docs/install.md links each file here.
func TestInstallDocLinksEveryManifest(t *testing.T) {
	doc, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.yaml")
	for _, f := range files {
		if !bytes.Contains(doc, []byte("../deploy/kubernetes/"+f)) {
			t.Errorf("docs/install.md does not link ../deploy/kubernetes/%s", f)
		}
	}
	if !bytes.Contains(doc, []byte("docker build -t "+image)) {
		t.Errorf("docs/install.md does not build the image as %q, the name the manifests run", image)
	}
}
