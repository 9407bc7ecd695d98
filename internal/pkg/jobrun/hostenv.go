package jobrun

import (
	"net/url"
	"strings"
)

// hostEnvNames are the daemon's own environment variables that reach run:
// steps. Everything else in the daemon's environment (the registration
// token, FORGELOAD_* overrides such as a Redis URL with a password, cloud
// credentials of the host) stays out: a step gets what it needs to run
// ordinary tools on this host and no more. runner.envs and runner.env_file
// add anything else an admin wants every job to see.
var hostEnvNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM",
	"LANG", "LANGUAGE", "TZ", "TMPDIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// hostEnvPrefixes are name prefixes allowed like hostEnvNames (the locale
// categories LC_ALL, LC_CTYPE, ...).
var hostEnvPrefixes = []string{"LC_"}

// defaultPath is a step's PATH when the daemon has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// hostEnvAllowed reports whether the daemon's variable name reaches steps.
func hostEnvAllowed(name string) bool {
	for _, n := range hostEnvNames {
		if name == n {
			return true
		}
	}
	for _, p := range hostEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// hostEnv returns the allowed part of environ (os.Environ's form) as a map,
// with PATH set to defaultPath when environ has none.
func hostEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && hostEnvAllowed(k) {
			env[k] = v
		}
	}
	if env["PATH"] == "" {
		env["PATH"] = defaultPath
	}
	return env
}

// hostEnvSecrets are the passwords in the proxy URLs of environ that
// hostEnv passes to steps: masked like secrets, since a step that prints
// its environment prints them.
func hostEnvSecrets(environ []string) []string {
	var out []string
	for k, v := range hostEnv(environ) {
		if !strings.HasSuffix(strings.ToUpper(k), "_PROXY") {
			continue
		}
		if u, err := url.Parse(v); err == nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				out = append(out, pw)
			}
		}
	}
	return out
}
