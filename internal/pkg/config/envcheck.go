package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/forgeload/forgeload/internal/pkg/suggest"
)

// OtherEnv are FORGELOAD_ variables that are not config keys but are read
// elsewhere: by register, by the container entrypoint, or set for jobs.
var OtherEnv = []string{
	"FORGELOAD_REGISTRATION_TOKEN", "FORGELOAD_REGISTRATION_TOKEN_FILE",
	"FORGELOAD_INSTANCE", "FORGELOAD_RUNNER_NAME", "FORGELOAD_EPHEMERAL",
	"FORGELOAD_ONCE", "FORGELOAD_CONFIG", "FORGELOAD_MAX_REG_ATTEMPTS",
	"FORGELOAD_DEMO_URL", "FORGELOAD_DATA_DIR",
	"FORGELOAD_REGISTRATION_SECRET", "FORGELOAD_REGISTRATION_SECRET_FILE",
}

// EnvNames returns the FORGELOAD_<SECTION>_<KEY> name of every config key,
// sorted.
func EnvNames() []string {
	var names []string
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		sec := t.Field(i)
		for j := range sec.Type.NumField() {
			names = append(names, EnvName(keyName(sec)+"."+keyName(sec.Type.Field(j))))
		}
	}
	sort.Strings(names)
	return names
}

// CheckEnv fails on a FORGELOAD_ variable in environ (os.Environ's form)
// that is not a known name but is a near miss of one (see
// [suggest.Closest]): a misspelt override would otherwise be ignored without
// a word. The error names each variable and the name it probably meant.
// Other unknown FORGELOAD_ names (FORGELOAD_BIN, FORGELOAD_HOME in a deploy
// script) are no error; [UnknownEnv] lists them for a warning.
func CheckEnv(environ []string) error {
	known := knownEnv()
	var bad []string
	for _, name := range unknownEnv(environ, known) {
		if s := suggest.Closest(name, known, nil); s != "" {
			bad = append(bad, fmt.Sprintf("%s (did you mean %s?)", name, s))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("unknown environment variable %s: FORGELOAD_<SECTION>_<KEY> must name a config key (see `forgeload config generate`); fix or unset it", strings.Join(bad, ", "))
}

// UnknownEnv returns, sorted, the FORGELOAD_ variables in environ that
// forgeload does not read and that [CheckEnv] does not refuse: callers warn
// about them, since a config override of that name would be ignored.
func UnknownEnv(environ []string) []string {
	known := knownEnv()
	var out []string
	for _, name := range unknownEnv(environ, known) {
		if suggest.Closest(name, known, nil) == "" {
			out = append(out, name)
		}
	}
	return out
}

func knownEnv() []string { return append(EnvNames(), OtherEnv...) }

// unknownEnv returns the sorted FORGELOAD_ names in environ not in known.
func unknownEnv(environ, known []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "FORGELOAD_") && !slices.Contains(known, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
