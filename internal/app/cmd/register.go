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
	secret        string
	secretFile    string
	uuid          string
	connect       bool
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

The token comes from --token, --token-file, FORGELOAD_REGISTRATION_TOKEN or
GITEA_RUNNER_REGISTRATION_TOKEN. When standard input is a terminal and
--no-interactive is not given, missing values are asked for.

Forgejo's offline registration needs no token and no Register call: the
admin registers a 40-character hexadecimal secret on the Forgejo host
(forgejo forgejo-cli actions register --secret SECRET --name NAME), and
--secret (or --secret-file, or FORGELOAD_REGISTRATION_SECRET) writes the
registration file from the same secret. --connect then checks that Forgejo
knows it.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runRegister(c.Context(), g, f, c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.instance, "instance", "", "forge URL, e.g. https://gitea.example.com")
	fl.StringVar(&f.token, "token", "", "registration token (or FORGELOAD_REGISTRATION_TOKEN, or --token-file)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the registration token")
	fl.StringVar(&f.secret, "secret", "", "Forgejo offline registration: the 40-hex-character secret given to `forgejo forgejo-cli actions register --secret` (or FORGELOAD_REGISTRATION_SECRET, or --secret-file)")
	fl.StringVar(&f.secretFile, "secret-file", "", "file holding the Forgejo offline registration secret")
	fl.StringVar(&f.uuid, "uuid", "", "with --secret/--secret-file: the runner's uuid, for a runner the forge made itself (Forgejo 15's POST .../actions/runners answers uuid and token; give the token as the secret); may be --ephemeral")
	fl.BoolVar(&f.connect, "connect", false, "with --secret: check that the forge knows the runner (a Declare call) before writing the file")
	fl.StringVar(&f.name, "name", "", "runner name shown in the forge (default: host name)")
	fl.StringVar(&f.labels, "labels", "", "comma-separated labels, name[:schema[:arg]] (default: runner.labels, i.e. forgeload)")
	fl.BoolVar(&f.ephemeral, "ephemeral", false, "register a runner that takes one job and is then removed by the forge")
	fl.BoolVar(&f.noInteractive, "no-interactive", false, "never prompt; fail on missing values")
	fl.BoolVar(&f.replace, "replace", false, "overwrite an existing registration file")
	fl.DurationVar(&f.pingTimeout, "wait", 2*time.Minute, "how long to wait for the forge to answer before giving up")
	return c
}

// runRegister is `forgeload register`: it resolves the flags (asking for
// what is missing on a terminal) into a [registration], registers it with
// the forge and writes the registration file, under the lock a running
// daemon holds.
func runRegister(ctx context.Context, g *globalFlags, f *registerFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(g.config)
	if err != nil {
		return err
	}
	if w := unknownEnvWarning(); w != "" {
		fmt.Fprintln(stderr, "warning:", w)
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
	r, err := newRegistration(f, cfg.Runner.Labels)
	if err != nil {
		return err
	}
	if !f.noInteractive && isTerminal(stdin) {
		r.ask(stdin, stdout)
	}
	if err := r.check(ctx, cfg); err != nil {
		return err
	}
	reg, err := r.register(ctx, cfg.Runner.Insecure, stderr)
	if err != nil {
		return err
	}
	if err := config.SaveRegistration(cfg.Runner.File, reg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Registered runner %q (id %d) with %s; labels %s.\nRegistration saved to %s (mode 0600).\nNext: forgeload daemon%s\n",
		reg.Name, reg.ID, reg.Address, strings.Join(config.LabelNames(reg.Labels), ","), cfg.Runner.File, configFlag(g))
	return nil
}

// registration is what `forgeload register` asks the forge for, resolved
// from the flags, the environment, the config and the terminal.
type registration struct {
	instance  string // as given; see [registration.check]
	token     string
	secret    string // Forgejo offline registration, instead of token
	uuid      string // with secret: given, not derived
	connect   bool   // with secret: Declare before writing the file
	name      string
	labels    []string
	ephemeral bool
	wait      time.Duration // --wait
}

// newRegistration resolves the flags: the token from --token, else
// --token-file, else FORGELOAD_REGISTRATION_TOKEN; the name from --name,
// else the host name; the labels from --labels, else runner.labels.
func newRegistration(f *registerFlags, labels []string) (*registration, error) {
	r := &registration{instance: f.instance, token: f.token, name: f.name, labels: labels, ephemeral: f.ephemeral, wait: f.pingTimeout, connect: f.connect, uuid: f.uuid}
	if r.token == "" && f.tokenFile != "" {
		data, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return nil, withCode(ExitBadInput, fmt.Errorf("read --token-file: %w", err))
		}
		r.token = strings.TrimSpace(string(data))
	}
	r.secret = f.secret
	if r.secret == "" && f.secretFile != "" {
		data, err := os.ReadFile(f.secretFile)
		if err != nil {
			return nil, withCode(ExitBadInput, fmt.Errorf("read --secret-file: %w", err))
		}
		r.secret = strings.TrimSpace(string(data))
	}
	if r.secret == "" && r.token == "" {
		r.secret = strings.TrimSpace(os.Getenv("FORGELOAD_REGISTRATION_SECRET"))
	}
	switch {
	case r.secret != "" && r.token != "":
		return nil, withCode(ExitBadInput, errors.New("register takes a registration token (--token, --token-file) or a Forgejo offline secret (--secret, --secret-file, FORGELOAD_REGISTRATION_SECRET), not both"))
	case r.uuid != "" && r.secret == "":
		return nil, withCode(ExitBadInput, errors.New("--uuid names a runner the forge already made: give its token with --secret or --secret-file"))
	case r.secret != "" && r.ephemeral && r.uuid == "":
		return nil, withCode(ExitBadInput, errors.New("--ephemeral needs a registration token, or --uuid for a runner the forge made ephemeral: a runner registered offline with --secret alone is never ephemeral"))
	case r.secret == "" && r.connect:
		return nil, withCode(ExitBadInput, errors.New("--connect checks an offline registration: give it with --secret"))
	}
	if r.secret == "" && r.token == "" {
		// Gitea's runner and its container image read this name.
		r.token = firstEnv("FORGELOAD_REGISTRATION_TOKEN", "GITEA_RUNNER_REGISTRATION_TOKEN")
	}
	if r.name == "" {
		r.name, _ = os.Hostname()
	}
	if f.labels != "" {
		r.labels = splitList(f.labels)
	}
	return r, nil
}

// firstEnv returns the first of the variables that is set and not blank,
// without surrounding white space.
func firstEnv(names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// ask asks on a terminal for the instance and token when they are missing
// (the token without echo), and offers the name and labels for change.
func (r *registration) ask(stdin io.Reader, stdout io.Writer) {
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
	if r.instance == "" {
		r.instance = ask("Forge instance URL (e.g. https://gitea.example.com)", "", false)
	}
	if r.token == "" && r.secret == "" {
		r.token = ask("Registration token", "", true)
	}
	r.name = ask("Runner name", r.name, false)
	if l := ask("Labels", strings.Join(r.labels, ","), false); l != "" {
		r.labels = splitList(l)
	}
}

// check fails with exit 2 on what the forge would refuse or the daemon
// could not serve: a missing instance or token, a bad label, a docker://
// label with no Docker Engine to run it, an instance that is not a URL.
// It leaves the instance without its trailing slash.
func (r *registration) check(ctx context.Context, cfg *config.Config) error {
	var missing []string
	if r.instance == "" {
		missing = append(missing, "--instance")
	}
	if r.token == "" && r.secret == "" {
		missing = append(missing, "--token (or --token-file, FORGELOAD_REGISTRATION_TOKEN or GITEA_RUNNER_REGISTRATION_TOKEN; or Forgejo's --secret)")
	}
	if r.secret != "" && r.uuid == "" {
		if _, err := config.SecretUUID(r.secret); err != nil {
			return withCode(ExitBadInput, fmt.Errorf("--secret: %w", err))
		}
	}
	if len(missing) > 0 {
		return withCode(ExitBadInput, fmt.Errorf("register needs %s", strings.Join(missing, " and ")))
	}
	for _, l := range r.labels {
		if _, err := config.ParseLabel(l); err != nil {
			return withCode(ExitBadInput, fmt.Errorf("--labels: %w", err))
		}
	}
	if dl := dockerLabels(r.labels); len(dl) > 0 {
		eng, err := connectEngine(ctx, cfg, "forgeload-register")
		if err != nil {
			return withCode(ExitBadInput, fmt.Errorf("--labels: %s run jobs in a container, and %w (container.docker_host in the config names the Engine); or register host labels only", strings.Join(dl, ", "), err))
		}
		_ = eng.Close()
	}
	instance := strings.TrimSuffix(r.instance, "/")
	if u, err := url.Parse(instance); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return withCode(ExitBadInput, fmt.Errorf("--instance %q is not the forge's URL; write it as https://gitea.example.com", r.instance))
	}
	r.instance = instance
	return nil
}

// register waits for the forge to answer (see [waitForForge]) and asks it
// for a runner identity; the result is what the registration file holds.
func (r *registration) register(ctx context.Context, insecure bool, stderr io.Writer) (*config.Registration, error) {
	cl, err := client.New(client.Options{Address: r.instance, Insecure: insecure, Version: ver.Version()})
	if err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	if err := waitForForge(ctx, cl, r.instance, r.name, r.wait, stderr); err != nil {
		return nil, err
	}
	if r.secret != "" {
		return r.offline(ctx, insecure)
	}
	resp, err := cl.Register(ctx, connect.NewRequest(&runnerv1.RegisterRequest{
		Name:         r.name,
		Token:        r.token,
		Version:      ver.Version(),
		Labels:       config.LabelNames(r.labels),
		Ephemeral:    r.ephemeral,
		Capabilities: capabilities,
	}))
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("register with %s: %s; check that the registration token is current (Settings -> Actions -> Runners)", r.instance, ce.Message())
		}
		return nil, fmt.Errorf("register with %s: %w", r.instance, err)
	}
	got := resp.Msg.GetRunner()
	return &config.Registration{
		ID:        got.GetId(),
		UUID:      got.GetUuid(),
		Name:      got.GetName(),
		Token:     got.GetToken(),
		Address:   r.instance,
		Labels:    r.labels,
		Ephemeral: r.ephemeral,
	}, nil
}

// offline is Forgejo's offline registration: the identity is derived from
// the secret (see [config.SecretUUID]) with no Register call, and with
// --connect a Declare checks that the forge knows it.
func (r *registration) offline(ctx context.Context, insecure bool) (*config.Registration, error) {
	uuid := r.uuid
	if uuid == "" {
		var err error
		if uuid, err = config.SecretUUID(r.secret); err != nil {
			return nil, withCode(ExitBadInput, fmt.Errorf("--secret: %w", err))
		}
	}
	if r.connect {
		cl, err := client.New(client.Options{Address: r.instance, UUID: uuid, Token: r.secret, Insecure: insecure, Version: ver.Version()})
		if err != nil {
			return nil, withCode(ExitBadInput, err)
		}
		_, err = cl.Declare(ctx, connect.NewRequest(&runnerv1.DeclareRequest{Version: ver.Version(), Labels: config.LabelNames(r.labels), Capabilities: capabilities}))
		if client.IsUnauthenticated(err) {
			return nil, withCode(ExitBadInput, fmt.Errorf("--connect: %s does not know the runner of this secret (uuid %s); register the secret there first: forgejo forgejo-cli actions register --secret <SECRET> --name %s", r.instance, uuid, r.name))
		}
		if err != nil {
			return nil, fmt.Errorf("--connect: declare the runner to %s: %w", r.instance, err)
		}
	}
	return &config.Registration{UUID: uuid, Name: r.name, Token: r.secret, Address: r.instance, Labels: r.labels, Ephemeral: r.ephemeral}, nil
}

// waitForForge pings the forge until it answers. A forge that does not
// answer yet (connection refused, a proxy's 502 while it starts) is waited
// for up to wait, and the reason is printed at once; a host that does not
// exist, a refused TLS certificate, or a server that answers but not as a
// forge fails at once, with the reason. An interrupt (ctx) says so.
func waitForForge(ctx context.Context, cl *client.Client, instance, name string, wait time.Duration, stderr io.Writer) error {
	fmt.Fprintf(stderr, "Waiting for %s to answer (up to %s)...\n", instance, wait)
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := cl.PingUntil(pctx, name, time.Second, func(err error) {
		fmt.Fprintf(stderr, "%s does not answer yet (%v); retrying every second for up to %s (--wait); press Ctrl-C to stop\n", instance, err, wait)
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted while waiting for %s to answer; nothing was registered", instance)
	case pctx.Err() != nil:
		return fmt.Errorf("the forge at %s did not answer within %s (--wait): %w; check --instance and that the forge is running", instance, wait, err)
	default:
		return withCode(ExitBadInput, fmt.Errorf("%s did not answer as a Gitea or Forgejo instance with Actions enabled: %w; check --instance (the forge's base URL, e.g. https://gitea.example.com) and that Actions are enabled there", instance, err))
	}
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
