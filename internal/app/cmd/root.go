package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	forgeload "github.com/forgeload/forgeload"
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

// globalFlags are the flags every command sees.
type globalFlags struct {
	config string
}

// Main runs forgeload with args and returns the process exit code. The first
// SIGINT/SIGTERM cancels the command's context; commands that drain (daemon)
// watch for a second signal themselves.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "forgeload:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitFailure
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "forgeload",
		Short:         "A Gitea/Forgejo Actions runner with an embedded load-test engine",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVarP(&g.config, "config", "c", "", "path to the daemon config file (YAML); 'forgeload config generate' prints one")
	root.AddCommand(
		newVersionCmd(),
		newConfigCmd(),
		newRegisterCmd(g),
		newDaemonCmd(g),
		newExecCmd(g),
		newLoadCmd(),
		newClusterCmd(g),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the forgeload version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.OutOrStdout(), "forgeload %s\n", ver.Version())
			return err
		},
	}
}

func newConfigCmd() *cobra.Command {
	cfg := &cobra.Command{Use: "config", Short: "Work with the daemon config"}
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
