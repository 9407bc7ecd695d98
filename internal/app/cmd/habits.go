package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	forgeload "github.com/forgeload/forgeload"
	"github.com/forgeload/forgeload/internal/pkg/suggest"
)

// This file holds the spellings that users of k6, Crankfire and Gitea's
// act_runner bring along: accepted where they mean what ours mean, and
// answered with ours where they do not (docs/load.md, "Habits from other
// tools").

// jsonToStdout is the --json-output value that prints the JSON summary on
// stdout instead of the table: Crankfire's --json-output switch.
const jsonToStdout = "-"

// habitArgs rewrites the arguments of `forgeload load` that pflag would
// split the wrong way: Crankfire's --json-output switch (followed by a flag
// or by nothing) becomes --json-output=-, and --dashboard followed by a
// port or HOST:PORT becomes --dashboard=PORT. Anything else is returned as
// given; "--" ends the rewriting.
func habitArgs(args []string) []string {
	if len(args) == 0 || args[0] != "load" {
		return args
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		next, hasNext := "", i+1 < len(args)
		if hasNext {
			next = args[i+1]
		}
		switch {
		case a == "--json-output" && (!hasNext || (strings.HasPrefix(next, "-") && next != jsonToStdout)):
			out = append(out, "--json-output="+jsonToStdout)
		case a == "--dashboard" && hasNext && isListenAddr(next):
			out = append(out, "--dashboard="+next)
			i++
		default:
			out = append(out, a)
		}
	}
	return out
}

// isListenAddr reports whether s is a port ("8089", ":8089") or HOST:PORT,
// as --dashboard takes, rather than a file name.
func isListenAddr(s string) bool {
	i := strings.LastIndexByte(s, ':')
	port := s[i+1:]
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return false
	}
	return i < 0 || !strings.ContainsAny(s[:i], "/\\")
}

// dashboardListenAddr completes a --dashboard value given as a port
// ("8089" or ":8089") with the loopback host; other values are returned as
// given.
func dashboardListenAddr(addr string) string {
	p := strings.TrimPrefix(addr, ":")
	if _, err := strconv.Atoi(p); err == nil && !strings.Contains(p, ":") {
		return "127.0.0.1:" + p
	}
	return addr
}

// loadFileArg takes the load config given as an argument (`forgeload load
// api.yaml`, as `k6 run script.js`) as -f. A k6 script, a second config or
// a misspelt `validate` is bad input naming the fix.
func loadFileArg(f *loadFlags, args []string) error {
	if len(args) == 0 {
		return nil
	}
	file := args[0]
	switch ext := strings.ToLower(filepath.Ext(file)); {
	case ext == ".js" || ext == ".ts" || ext == ".mjs":
		return withCode(ExitBadInput, fmt.Errorf("forgeload load %s: forgeload runs a YAML or JSON load config (Crankfire's format, docs/load-config.md), not a k6 script: write the script's target, rate and duration as a config and run 'forgeload load -f config.yaml'", file))
	case f.file != "" && f.file != file:
		return withCode(ExitBadInput, fmt.Errorf("forgeload load %s: -f %q already names the load config: give one config, either as -f FILE or as the argument", file, f.file))
	}
	if _, err := os.Stat(file); err != nil && errors.Is(err, os.ErrNotExist) {
		if s := suggest.Closest(file, []string{"validate"}, nil); s != "" {
			return withCode(ExitBadInput, fmt.Errorf("forgeload load %s: no such file: did you mean 'forgeload load %s FILE'?", file, s))
		}
	}
	f.file = file
	return nil
}

// flagHints answer a flag of another tool that has no alias here with the
// flag or key that does the same in forgeload; the key is the command path
// and the flag as typed.
var flagHints = map[string]string{
	"forgeload daemon --labels":   "the daemon offers the labels of its registration: set them with 'forgeload register --labels ...' (as act_runner does), or with runner.labels in the config or FORGELOAD_RUNNER_LABELS, which a daemon started later reports to the forge",
	"forgeload load --iterations": "did you mean --total (config key total)? It stops after that many requests",
	"forgeload load -i":           "did you mean --total (config key total)? It stops after that many requests",
}

// flagError turns cobra's error for an unknown flag into one that names
// ours: a hint for another tool's flag, or the closest flag of the command.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	var flag string
	switch {
	case strings.HasPrefix(msg, "unknown flag: "):
		flag = strings.TrimPrefix(msg, "unknown flag: ")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		// "unknown shorthand flag: 'l' in -l"
		_, rest, _ := strings.Cut(msg, "'")
		short, _, _ := strings.Cut(rest, "'")
		flag = "-" + short
	default:
		return err
	}
	if hint, ok := flagHints[c.CommandPath()+" "+flag]; ok {
		return fmt.Errorf("%w: %s", err, hint)
	}
	if !strings.HasPrefix(flag, "--") {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if s := suggest.Closest(strings.TrimPrefix(flag, "--"), names, nil); s != "" {
		return fmt.Errorf("%w: did you mean --%s? (see '%s --help')", err, s, c.CommandPath())
	}
	return err
}

// newGenerateConfigCmd is act_runner's `generate-config`, which prints the
// example config as `forgeload config generate` does.
func newGenerateConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "generate-config",
		Short:  "Print config.example.yaml (act_runner's spelling of 'forgeload config generate')",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := c.OutOrStdout().Write(forgeload.ExampleConfig)
			return err
		},
	}
}

// listJobs is `exec --list` (act_runner's exec -l): the jobs in the order
// they would run, one a line, with the jobs each needs and its file.
func listJobs(w io.Writer, jobs []execJob) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tjob\tname\tneeds\tfile")
	for i, j := range jobs {
		needs := strings.Join(j.needs, ",")
		if needs == "" {
			needs = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", i+1, j.id, j.name, needs, j.file)
	}
	return tw.Flush()
}
