package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	forgeload "github.com/forgeload/forgeload"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/ver"
)

// Exit codes shared by every command.
const (
	ExitOK       = 0
	ExitFailure  = 1 // the work ran and failed (a threshold, a job)
	ExitBadInput = 2 // bad flags, config or load spec
)

// exitError carries an explicit exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that Main exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// globalFlags are the flags shared by the commands that read the daemon
// config.
type globalFlags struct {
	config string
}

// loadConfig reads the daemon config at path (none: the defaults) with the
// FORGELOAD_* overrides applied. A misspelt override or a bad config is bad
// input (exit 2).
func loadConfig(path string) (*config.Config, error) {
	if err := config.CheckEnv(os.Environ()); err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	cfg, err := config.Load(path, os.Getenv)
	if err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	return cfg, nil
}

// Main runs forgeload with args and returns the process exit code. The first
// SIGINT/SIGTERM cancels the command's context; commands that drain (daemon)
// watch for a second signal themselves.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(habitArgs(args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "forgeload:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		return ExitBadInput // cobra's error for a mistyped command
	}
	return ExitFailure
}

// badInput marks an error from cobra's flag or argument parsing as bad
// input, so that it exits 2, naming our flag for a mistyped or foreign one.
func badInput(c *cobra.Command, err error) error { return withCode(ExitBadInput, flagError(c, err)) }

// argsAreBadInput makes every command's argument errors bad input.
func argsAreBadInput(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return withCode(ExitBadInput, fmt.Errorf("%s: %w (see '%s --help')", c.CommandPath(), err, c.CommandPath()))
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		argsAreBadInput(sub)
	}
}

// noSubcommand is the RunE of a command that only groups others: without
// arguments it prints its help; an argument is a mistyped subcommand.
func noSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return c.Help()
	}
	return withCode(ExitBadInput, fmt.Errorf("unknown command %q for %q (see '%s --help')", args[0], c.CommandPath(), c.CommandPath()))
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globalFlags{}
	// -v/--version is this command's own flag, not cobra's Version: cobra
	// prints a custom version text only through a text/template, and a
	// template reachable in the binary makes the linker keep every
	// exported method of every type (docs/dependencies.md).
	var version bool
	root := &cobra.Command{
		Use:           "forgeload",
		Short:         "A Gitea/Forgejo Actions runner with an embedded load-test engine",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(c *cobra.Command, args []string) error {
			if version {
				return printVersion(c)
			}
			return noSubcommand(c, args)
		},
	}
	root.Flags().BoolVarP(&version, "version", "v", false, "version for forgeload")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(badInput)
	// -c/--config names the daemon config for the commands that read it.
	// It is not a root flag, so that `load` can keep -c for concurrency;
	// `forgeload -c FILE daemon` still works, since cobra finds the command
	// first and parses every flag with its flag set.
	daemonCfg := []*cobra.Command{newConfigCmd(g), newRegisterCmd(g), newDaemonCmd(g), newExecCmd(g), newClusterCmd(g)}
	for _, c := range daemonCfg {
		c.PersistentFlags().StringVarP(&g.config, "config", "c", "", "path to the daemon config file (YAML); 'forgeload config generate' prints one")
	}
	root.AddCommand(newVersionCmd(), newLoadCmd(), newCompareCmd(), newGenerateConfigCmd())
	root.AddCommand(daemonCfg...)
	argsAreBadInput(root)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date, Go version and forge protocol",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return printVersion(c) },
	}
}

// printVersion prints the build's identity, for `version` and --version.
func printVersion(c *cobra.Command) error {
	_, err := fmt.Fprint(c.OutOrStdout(), ver.Get().String())
	return err
}

func newConfigCmd(g *globalFlags) *cobra.Command {
	cfg := &cobra.Command{Use: "config", Short: "Work with the daemon config", RunE: noSubcommand}
	cfg.AddCommand(&cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a daemon config file (or the -c one) as the daemon would, and exit 2 if it is bad",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path := g.config
			if len(args) == 1 {
				path = args[0]
			}
			if path == "" {
				return withCode(ExitBadInput, errors.New("config validate: give the config file, e.g. 'forgeload config validate /etc/forgeload/config.yaml'"))
			}
			// As the daemon reads it: a misspelt FORGELOAD_ override that
			// stops the daemon fails here too, and an ignored one is said.
			if _, err := loadConfig(path); err != nil {
				return err
			}
			if w := unknownEnvWarning(); w != "" {
				fmt.Fprintln(c.ErrOrStderr(), "warning:", w)
			}
			_, err := fmt.Fprintf(c.OutOrStdout(), "%s: valid daemon config (FORGELOAD_* variables applied)\n", path)
			return err
		},
	})
	cfg.AddCommand(&cobra.Command{
		Use:   "generate",
		Short: "Print config.example.yaml: every key with its meaning and default",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := c.OutOrStdout().Write(forgeload.ExampleConfig)
			return err
		},
	})
	return cfg
}
