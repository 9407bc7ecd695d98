package jobrun

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forgeload/forgeload/internal/pkg/container"
)

func TestParsePort(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]container.Port{
		"8080":                    {Container: "8080"},
		"9000:8080":               {Container: "8080", Host: 9000},
		"127.0.0.2:9000:8080/tcp": {Container: "8080/tcp", Host: 9000, HostIP: netip.MustParseAddr("127.0.0.2")},
		"[::1]:9000:53/udp":       {Container: "53/udp", Host: 9000, HostIP: netip.MustParseAddr("::1")},
	} {
		if got, err := parsePort(in); err != nil || got != want {
			t.Errorf("parsePort(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"http":          `"http" is not a port number`,
		"0":             `"0" is not a port number`,
		"8080/icmp":     `protocol "icmp" is not tcp, udp or sctp`,
		"a:9000:8080":   `"a" is not an IP address`,
		"1:2:3:4":       "want 8080, 9000:8080 or 127.0.0.1:9000:8080",
		"70000:8080":    `"70000" is not a port number`,
		"127.0.0.1::80": `"" is not a port number`,
	} {
		if _, err := parsePort(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parsePort(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func FuzzParsePort(f *testing.F) {
	for _, s := range []string{"8080", "9000:8080/udp", "[::1]:1:2", "1.2.3.4:5:6/sctp", "::::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePort(s)
		if err == nil && (p.Container == "" || p.Host < 0 || p.Host > 65535) {
			t.Fatalf("parsePort(%q) = %+v with no error", s, p)
		}
	})
}

// A job mounts named volumes and workspace paths; host paths only where
// the admin allows them, and no symlink leads out of the workspace.
func TestCheckVolume(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(ws, "out")); err != nil {
		t.Fatal(err)
	}
	realWS, _ := filepath.EvalSymlinks(ws)
	j := &job{deps: &Config{ValidVolumes: []string{"/srv/fixtures/*", "pg*"}}, ws: ws}
	for _, tc := range []struct{ in, bind, name, err string }{
		{in: "pgdata:/var/lib/postgresql/data", bind: "pgdata:/var/lib/postgresql/data", name: "pgdata"},
		{in: "pgdata:/x:ro,nocopy", bind: "pgdata:/x:ro,nocopy", name: "pgdata"},
		// A named volume must be listed too: the container deployment
		// keeps .runner in forgeload-data.
		{in: "forgeload-data:/data", err: "named volume forgeload-data is not allowed on this runner"},
		{in: "pg/../forgeload-data:/data", err: "is not allowed on this runner"},
		{in: "/srv/fixtures:/x", err: "host path /srv/fixtures is not allowed"},
		{in: "./data:/data:rshared", err: `mode "rshared" is not allowed`},
		{in: "pgdata:/x:ro,shared", err: `mode "shared" is not allowed`},
		{in: "/cache", bind: "/cache"},
		{in: "./data:/data:ro", bind: realWS + "/data:/data:ro"},
		// The workspace itself: how a job's containers share files.
		{in: ".:/shared", bind: realWS + ":/shared"},
		{in: "/srv/fixtures/a:/fixtures:ro", bind: "/srv/fixtures/a:/fixtures:ro"},
		{in: "/home/runner/.runner:/r", err: "host path /home/runner/.runner is not allowed on this runner"},
		{in: "/srv/fixtures/../../etc:/x", err: "is not allowed on this runner"},
		{in: "./out:/x", err: "leads out of the workspace"},
		{in: "./nope:/x", err: "is not in the workspace"},
		{in: "cache", err: "want name:/path"},
		{in: "name:relative", err: "want name:/path"},
	} {
		bind, name, err := j.checkVolume(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("checkVolume(%q) = %q, %v; want an error containing %q", tc.in, bind, err, tc.err)
			}
			continue
		}
		if err != nil || bind != tc.bind || name != tc.name {
			t.Errorf("checkVolume(%q) = %q, %q, %v; want %q, %q", tc.in, bind, name, err, tc.bind, tc.name)
		}
	}
}

// FuzzCheckVolume: whatever a job writes in volumes:, what is accepted
// mounts a listed volume name, a listed host path, the workspace or an
// anonymous volume, and never with shared propagation.
func FuzzCheckVolume(f *testing.F) {
	for _, s := range []string{"pgdata:/x:ro", "forgeload-data:/data", "./a:/b", ".:/s", "/srv/fixtures/a:/f", "/etc:/e", "/anon", "pg*:/x:rshared", "/srv/fixtures/../../etc:/x"} {
		f.Add(s)
	}
	ws := f.TempDir()
	realWS, _ := filepath.EvalSymlinks(ws)
	j := &job{deps: &Config{ValidVolumes: []string{"/srv/fixtures/*", "pg*"}}, ws: ws}
	f.Fuzz(func(t *testing.T, v string) {
		bind, name, err := j.checkVolume(v)
		if err != nil {
			return
		}
		src, rest, hasDst := strings.Cut(bind, ":")
		_, mode, _ := strings.Cut(rest, ":")
		switch {
		case !hasDst:
			if !strings.HasPrefix(bind, "/") {
				t.Fatalf("checkVolume(%q) = %q: an anonymous volume that is no absolute path", v, bind)
			}
		case name != "":
			if ok, _ := filepath.Match("pg*", name); !ok || name != src {
				t.Fatalf("checkVolume(%q) = %q, %q: an unlisted named volume", v, bind, name)
			}
		case src == realWS || strings.HasPrefix(src, realWS+"/"):
		default:
			if ok, _ := filepath.Match("/srv/fixtures/*", src); !ok {
				t.Fatalf("checkVolume(%q) = %q: an unlisted host path", v, bind)
			}
		}
		for m := range strings.SplitSeq(mode, ",") {
			if m == "shared" || m == "rshared" {
				t.Fatalf("checkVolume(%q) = %q: shared propagation", v, bind)
			}
		}
	})
}
