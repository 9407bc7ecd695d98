package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/forgeload/forgeload/internal/pkg/client"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/ver"
)

// registerFlags are `forgeload register`'s flags.
type registerFlags struct {
	instance      string
	token         string
	tokenFile     string
	name          string
	labels        string
	ephemeral     bool
	noInteractive bool
	replace       bool
	pingTimeout   time.Duration
}

// capabilities are what this runner implements and advertises in Register
// and Declare: "cancelling" means that after a cancel from the UI it still
// runs if: always()/cancelled() steps and reports the task itself.
var capabilities = []string{"cancelling"}

func newRegisterCmd(g *globalFlags) *cobra.Command {
	f := &registerFlags{}
	c := &cobra.Command{
		Use:   "register",
		Short: "Register this runner with a Gitea or Forgejo instance and write the .runner file",
		Long: `register asks a Gitea or Forgejo instance for a runner identity with a
registration token (Site/Org/Repo settings -> Actions -> Runners), and writes
it to the registration file (runner.file, default .runner) with mode 0600.
Then run "forgeload daemon".

The token comes from --token, --token-file or FORGELOAD_REGISTRATION_TOKEN.
When standard input is a terminal and --no-interactive is not given, missing
values are asked for.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runRegister(c.Context(), g, f, c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.instance, "instance", "", "forge URL, e.g. https://gitea.example.com")
	fl.StringVar(&f.token, "token", "", "registration token (or FORGELOAD_REGISTRATION_TOKEN, or --token-file)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the registration token")
	fl.StringVar(&f.name, "name", "", "runner name shown in the forge (default: host name)")
	fl.StringVar(&f.labels, "labels", "", "comma-separated labels, name[:schema[:arg]] (default: runner.labels, i.e. forgeload)")
	fl.BoolVar(&f.ephemeral, "ephemeral", false, "register a runner that takes one job and is then removed by the forge")
	fl.BoolVar(&f.noInteractive, "no-interactive", false, "never prompt; fail on missing values")
	fl.BoolVar(&f.replace, "replace", false, "overwrite an existing registration file")
	fl.DurationVar(&f.pingTimeout, "wait", 2*time.Minute, "how long to wait for the forge to answer before giving up")
	return c
}

func runRegister(ctx context.Context, g *globalFlags, f *registerFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := config.CheckEnv(os.Environ()); err != nil {
		return withCode(ExitBadInput, err)
	}
	cfg, err := config.Load(g.config, os.Getenv)
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	// A running daemon holds this lock: replacing its registration under
	// it would orphan the runner it serves as.
	unlock, err := config.LockRegistration(cfg.Runner.File)
	if err != nil {
		return fmt.Errorf("%w; stop that daemon before registering again", err)
	}
	defer unlock() //nolint:errcheck // released at exit anyway
	if _, err := os.Stat(cfg.Runner.File); err == nil && !f.replace {
		return withCode(ExitBadInput, fmt.Errorf("registration file %s already exists: this runner is registered. Delete it, or pass --replace to register again", cfg.Runner.File))
	}
	if f.token == "" && f.tokenFile != "" {
		data, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return withCode(ExitBadInput, fmt.Errorf("read --token-file: %w", err))
		}
		f.token = strings.TrimSpace(string(data))
	}
	if f.token == "" {
		f.token = os.Getenv("FORGELOAD_REGISTRATION_TOKEN")
	}
	if f.name == "" {
		f.name, _ = os.Hostname()
	}
	labels := cfg.Runner.Labels
	if f.labels != "" {
		labels = splitList(f.labels)
	}

	interactive := !f.noInteractive && isTerminal(stdin)
	if interactive {
		in := bufio.NewReader(stdin)
		ask := func(prompt, def string, secret bool) string {
			if def != "" && !secret {
				fmt.Fprintf(stdout, "%s [%s]: ", prompt, def)
			} else {
				fmt.Fprintf(stdout, "%s: ", prompt)
			}
			if secret {
				// Read without echo, so the token never shows on screen.
				if fd, ok := stdin.(*os.File); ok {
					b, err := term.ReadPassword(int(fd.Fd()))
					fmt.Fprintln(stdout)
					if err == nil {
						return strings.TrimSpace(string(b))
					}
				}
			}
			line, _ := in.ReadString('\n')
			if line = strings.TrimSpace(line); line != "" {
				return line
			}
			return def
		}
		if f.instance == "" {
			f.instance = ask("Forge instance URL (e.g. https://gitea.example.com)", "", false)
		}
		if f.token == "" {
			f.token = ask("Registration token", "", true)
		}
		f.name = ask("Runner name", f.name, false)
		if l := ask("Labels", strings.Join(labels, ","), false); l != "" {
			labels = splitList(l)
		}
	}
	var missing []string
	if f.instance == "" {
		missing = append(missing, "--instance")
	}
	if f.token == "" {
		missing = append(missing, "--token (or --token-file, or FORGELOAD_REGISTRATION_TOKEN)")
	}
	if len(missing) > 0 {
		return withCode(ExitBadInput, fmt.Errorf("register needs %s", strings.Join(missing, " and ")))
	}
	for _, l := range labels {
		if _, err := config.ParseLabel(l); err != nil {
			return withCode(ExitBadInput, fmt.Errorf("--labels: %w", err))
		}
	}
	instance := strings.TrimSuffix(f.instance, "/")
	if u, err := url.Parse(instance); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return withCode(ExitBadInput, fmt.Errorf("--instance %q is not the forge's URL; write it as https://gitea.example.com", f.instance))
	}
	cl, err := client.New(client.Options{Address: instance, Insecure: cfg.Runner.Insecure, Version: ver.Version()})
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	fmt.Fprintf(stderr, "Waiting for %s to answer (up to %s)...\n", instance, f.pingTimeout)
	pctx, cancel := context.WithTimeout(ctx, f.pingTimeout)
	defer cancel()
	if err := cl.PingUntil(pctx, f.name, time.Second); err != nil {
		return fmt.Errorf("the forge at %s did not answer within %s: %w; check --instance and that Actions are enabled there", instance, f.pingTimeout, err)
	}
	resp, err := cl.Register(ctx, connect.NewRequest(&runnerv1.RegisterRequest{
		Name:         f.name,
		Token:        f.token,
		Version:      ver.Version(),
		Labels:       config.LabelNames(labels),
		Ephemeral:    f.ephemeral,
		Capabilities: capabilities,
	}))
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return fmt.Errorf("register with %s: %s; check that the registration token is current (Settings -> Actions -> Runners)", instance, ce.Message())
		}
		return fmt.Errorf("register with %s: %w", instance, err)
	}
	r := resp.Msg.GetRunner()
	reg := &config.Registration{
		ID:        r.GetId(),
		UUID:      r.GetUuid(),
		Name:      r.GetName(),
		Token:     r.GetToken(),
		Address:   instance,
		Labels:    labels,
		Ephemeral: f.ephemeral,
	}
	if err := config.SaveRegistration(cfg.Runner.File, reg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Registered runner %q (id %d) with %s; labels %s.\nRegistration saved to %s (mode 0600).\nNext: forgeload daemon%s\n",
		reg.Name, reg.ID, instance, strings.Join(config.LabelNames(labels), ","), cfg.Runner.File, configFlag(g))
	return nil
}

func configFlag(g *globalFlags) string {
	if g.config == "" {
		return ""
	}
	return " -c " + g.config
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
