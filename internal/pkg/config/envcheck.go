package config

import (
	"fmt"
	"reflect"
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
	"FORGELOAD_DEMO_URL",
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
// that is neither a config key nor one of [OtherEnv]: a misspelt override
// would otherwise be ignored without a word.
func CheckEnv(environ []string) error {
	known := append(EnvNames(), OtherEnv...)
	var bad []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "FORGELOAD_") {
			continue
		}
		found := false
		for _, k := range known {
			if k == name {
				found = true
				break
			}
		}
		if found {
			continue
		}
		msg := name
		if s := suggest.Closest(name, known, nil); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		bad = append(bad, msg)
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("unknown environment variable %s: FORGELOAD_<SECTION>_<KEY> must name a config key (see `forgeload config generate`); fix or unset it", strings.Join(bad, ", "))
}
