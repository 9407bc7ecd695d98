package loadrun

import (
	"fmt"
	"os"

	"github.com/forgeload/forgeload/internal/pkg/load/spec"
)

// Input says where a load config comes from. The zero value is an empty
// config named "with".
type Input struct {
	// File is the config file; "" starts from an empty config named Name.
	File string
	// Root, when set, confines File and every file the config names
	// (body_file, feeder, proto files) to a directory, each read bounded:
	// a job's workspace. Without it File is read from the working directory.
	Root *os.Root
	// Name names an empty config in errors ("with", "flags").
	Name string
	// Values are typed overrides (Crankfire's flags), applied first.
	Values map[string]any
	// Inline are key=value overrides (a step's with:, the CLI's flags),
	// applied last: they win.
	Inline map[string]string
	// InlineWhere, when set, prefixes the errors of Inline, e.g.
	// `step "api", with`.
	InlineWhere string
}

// Load reads the config in reads, applies its overrides and validates the
// result. Errors name the file:line (or "inline") and the key; they mean
// bad input. Warnings are left to the caller ([spec.Config.Warnings]).
func Load(in Input) (*spec.Config, error) {
	var cfg *spec.Config
	var err error
	switch {
	case in.File != "" && in.Root != nil:
		cfg, err = spec.LoadIn(in.Root, in.File)
	case in.File != "":
		cfg, err = spec.Load(in.File)
	default:
		name := in.Name
		if name == "" {
			name = "with"
		}
		cfg, err = spec.Parse(name, []byte("{}"))
	}
	if err != nil {
		return nil, err
	}
	if in.Root != nil {
		cfg.ConfineTo(in.Root)
	}
	if len(in.Values) > 0 {
		if err := cfg.OverrideValues(in.Values); err != nil {
			return nil, err
		}
	}
	if err := cfg.Override(in.Inline); err != nil {
		if in.InlineWhere != "" {
			return nil, fmt.Errorf("%s: %w", in.InlineWhere, err)
		}
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}
