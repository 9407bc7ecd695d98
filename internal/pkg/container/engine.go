package container

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	ctypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/forgeload/forgeload/internal/pkg/backoff"
)

// Labels set on every container, network and volume the Engine creates.
const (
	// LabelOwner holds the owner passed to [New]: the runner's id.
	LabelOwner = "io.forgeload.owner"
	// LabelJob holds the job key of the [Spec] (or network, or volume).
	LabelJob = "io.forgeload.job"
)

// ErrImageNotFound is wrapped by errors for an image that is neither on the
// Engine nor (under the pull policy) pullable.
var ErrImageNotFound = errors.New("image not found")

// ErrUnreachable is wrapped by [New]'s error when no Docker Engine answers.
var ErrUnreachable = errors.New("no Docker Engine is reachable")

// Options configures [New]. The zero value reaches the Engine named by the
// DOCKER_HOST environment variable, or the local socket, with owner
// "forgeload".
type Options struct {
	// Host is the Engine's address, such as unix:///var/run/docker.sock or
	// tcp://127.0.0.1:2375. Default: DOCKER_HOST, else the local socket.
	Host string
	// Owner is the value of [LabelOwner] on everything the Engine creates
	// and the scope of [Engine.Reap]. Default "forgeload".
	Owner string
}

// Engine is a connection to a Docker Engine. Build it with [New]; it is
// safe for concurrent use. Close it when done.
type Engine struct {
	cli   *client.Client
	owner string
	host  string
}

// New connects to the Engine and checks that it answers. The error wraps
// [ErrUnreachable] and says how to fix it.
func New(ctx context.Context, o Options) (*Engine, error) {
	if o.Owner == "" {
		o.Owner = "forgeload"
	}
	opts := []client.Opt{client.FromEnv}
	if o.Host != "" {
		opts = append(opts, client.WithHost(o.Host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: docker client: %v; set DOCKER_HOST to the Engine's address", ErrUnreachable, err)
	}
	host := cli.DaemonHost()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w at %s: %v; start the Docker Engine (systemctl start docker), give this user access to its socket (the docker group), or set DOCKER_HOST", ErrUnreachable, host, err)
	}
	return &Engine{cli: cli, owner: o.Owner, host: host}, nil
}

// Close releases the client's connections.
func (e *Engine) Close() error { return e.cli.Close() }

// Owner returns the owner label value of this Engine's objects.
func (e *Engine) Owner() string { return e.owner }

func (e *Engine) labels(job string, extra map[string]string) map[string]string {
	l := map[string]string{LabelOwner: e.owner, LabelJob: job}
	for k, v := range extra {
		if k != LabelOwner && k != LabelJob {
			l[k] = v
		}
	}
	return l
}

// PullPolicy says when [Engine.EnsureImage] pulls.
type PullPolicy string

// Pull policies.
const (
	// PullNever uses only images already on the Engine.
	PullNever PullPolicy = "never"
	// PullMissing pulls an image that is not on the Engine. The default.
	PullMissing PullPolicy = "missing"
	// PullAlways pulls every time, so a moving tag is fresh.
	PullAlways PullPolicy = "always"
)

// Auth is a registry login, from a job's credentials:.
type Auth struct {
	Username, Password string
}

func (a *Auth) encode(ref string) (string, error) {
	if a == nil || (a.Username == "" && a.Password == "") {
		return "", nil
	}
	b, err := json.Marshal(registry.AuthConfig{Username: a.Username, Password: a.Password, ServerAddress: registryHost(ref)})
	if err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(b), nil
}

// registryHost is the registry part of an image reference, or "" for
// Docker Hub.
func registryHost(ref string) string {
	first, _, ok := strings.Cut(ref, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return ""
}

// EnsureImage makes ref available on the Engine under policy p. Pull
// progress is discarded. An image that cannot be had wraps
// [ErrImageNotFound], and the message says what was tried.
func (e *Engine) EnsureImage(ctx context.Context, ref string, p PullPolicy, auth *Auth) error {
	if p == "" {
		p = PullMissing
	}
	if p != PullAlways {
		_, err := e.cli.ImageInspect(ctx, ref)
		if err == nil {
			return nil
		}
		if !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("inspect image %s: %w", ref, err)
		}
		if p == PullNever {
			return fmt.Errorf("image %s: %w on the Docker Engine, and the runner's pull policy is never (container.pull_policy); load or build the image on this host, or set the policy to missing", ref, ErrImageNotFound)
		}
	}
	ra, err := auth.encode(ref)
	if err != nil {
		return fmt.Errorf("pull image %s: encode credentials: %w", ref, err)
	}
	rc, err := e.cli.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: ra})
	if err == nil {
		err = drainPull(rc)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("pull image %s: %w", ref, context.Cause(ctx))
		}
		if p == PullAlways {
			// A failed refresh of an image that is present is not fatal.
			if _, ierr := e.cli.ImageInspect(ctx, ref); ierr == nil {
				return nil
			}
		}
		return fmt.Errorf("image %s: %w: it is not on the Docker Engine and pulling it failed (%v); check the name and tag, the registry credentials (credentials: in the job), and that the registry is reachable from this host", ref, ErrImageNotFound, oneLine(err.Error()))
	}
	return nil
}

// drainPull reads a pull's JSON progress stream to its end and returns the
// first error it reports.
func drainPull(rc io.ReadCloser) error {
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
	}
}

// CreateNetwork creates a bridge network named name for job and returns
// its id.
func (e *Engine) CreateNetwork(ctx context.Context, job, name string) (string, error) {
	res, err := e.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: e.labels(job, nil)})
	if err != nil {
		return "", fmt.Errorf("create network %s: %w", name, err)
	}
	return res.ID, nil
}

// CreateVolume creates a named volume for job. An existing volume of that
// name is reused as it is.
func (e *Engine) CreateVolume(ctx context.Context, job, name string) error {
	if _, err := e.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err == nil {
		return nil
	}
	if _, err := e.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: e.labels(job, nil)}); err != nil {
		return fmt.Errorf("create volume %s: %w", name, err)
	}
	return nil
}

// Port publishes a container port on the host.
type Port struct {
	// Container is the port inside, such as "80" or "53/udp".
	Container string
	// HostIP is the host address to bind; the zero value is 127.0.0.1.
	HostIP netip.Addr
	// Host is the host port; 0 lets the Engine pick a free one.
	Host int
}

// Health is a container health check, as docker run's --health-* flags set
// it. A zero field keeps the image's value (or the Engine's default).
type Health struct {
	// Test is ["CMD-SHELL", cmd], ["CMD", args...] or ["NONE"].
	Test        []string
	Interval    time.Duration
	Timeout     time.Duration
	StartPeriod time.Duration
	Retries     int
}

// Spec describes a container to start. Image and Job are required.
type Spec struct {
	// Job is the job key, stored in [LabelJob].
	Job string
	// Name is the container name; empty lets the Engine choose.
	Name  string
	Image string
	// Cmd and Entrypoint replace the image's when non-nil.
	Cmd, Entrypoint []string
	Env             []string // KEY=VALUE
	WorkingDir      string
	User            string
	Hostname        string
	// Network is the network to join, with Aliases as its names there.
	Network string
	Aliases []string
	Ports   []Port
	// Binds are docker -v values: /host:/ctr[:ro] or volume:/ctr[:ro].
	Binds  []string
	Tmpfs  map[string]string
	Health *Health
	// NanoCPUs caps CPU (1e9 = one core); Memory caps memory in bytes.
	NanoCPUs, Memory, MemoryReservation, ShmSize int64
	CPUShares                                    int64
	PidsLimit                                    int64
	// Labels are extra labels; the ownership labels always win.
	Labels     map[string]string
	ExtraHosts []string
	// CapAdd are capabilities to add, in [CanonicalCapability] form;
	// CapDrop those to drop.
	CapAdd     []string
	CapDrop    []string
	ReadOnly   bool
	Init       bool
	StopSignal string
	// Sysctls, Ulimits and GroupAdd widen the container: in a job, only
	// the flags of [GatedOptions] set them, where the admin's [Policy]
	// allows.
	Sysctls  map[string]string
	Ulimits  []Ulimit
	GroupAdd []string
}

// Ulimit is one --ulimit: a resource such as nofile, with its soft and
// hard limits (-1: unlimited).
type Ulimit struct {
	Name       string
	Soft, Hard int64
}

// noNewPrivileges is the security option every container runs with: no
// process in it gains privileges through setuid or file capabilities.
const noNewPrivileges = "no-new-privileges:true"

// Start creates and starts a container and returns its id. A container
// that was created but did not start is removed again. Every container
// runs with no-new-privileges, whatever s says.
func (e *Engine) Start(ctx context.Context, s Spec) (string, error) {
	cfg := &ctypes.Config{
		Image:        s.Image,
		Env:          s.Env,
		Cmd:          s.Cmd,
		Entrypoint:   s.Entrypoint,
		WorkingDir:   s.WorkingDir,
		User:         s.User,
		Hostname:     s.Hostname,
		Labels:       e.labels(s.Job, s.Labels),
		ExposedPorts: network.PortSet{},
		StopSignal:   s.StopSignal,
	}
	hc := &ctypes.HostConfig{
		Binds:          s.Binds,
		Tmpfs:          s.Tmpfs,
		PortBindings:   network.PortMap{},
		ExtraHosts:     s.ExtraHosts,
		CapAdd:         s.CapAdd,
		CapDrop:        s.CapDrop,
		ReadonlyRootfs: s.ReadOnly,
		ShmSize:        s.ShmSize,
		Sysctls:        s.Sysctls,
		GroupAdd:       s.GroupAdd,
		SecurityOpt:    []string{noNewPrivileges},
	}
	for _, u := range s.Ulimits {
		hc.Ulimits = append(hc.Ulimits, &ctypes.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	if s.Init {
		t := true
		hc.Init = &t
	}
	hc.NanoCPUs, hc.Memory, hc.MemoryReservation, hc.CPUShares = s.NanoCPUs, s.Memory, s.MemoryReservation, s.CPUShares
	if s.PidsLimit != 0 {
		pl := s.PidsLimit
		hc.PidsLimit = &pl
	}
	for _, p := range s.Ports {
		cp, err := network.ParsePort(p.Container)
		if err != nil {
			return "", fmt.Errorf("container port %q: %w", p.Container, err)
		}
		ip := p.HostIP
		if !ip.IsValid() {
			ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		hp := ""
		if p.Host > 0 {
			hp = strconv.Itoa(p.Host)
		}
		cfg.ExposedPorts[cp] = struct{}{}
		hc.PortBindings[cp] = append(hc.PortBindings[cp], network.PortBinding{HostIP: ip, HostPort: hp})
	}
	if h := s.Health; h != nil {
		cfg.Healthcheck = &ctypes.HealthConfig{Test: h.Test, Interval: h.Interval, Timeout: h.Timeout, StartPeriod: h.StartPeriod, Retries: h.Retries}
	}
	var nc *network.NetworkingConfig
	if s.Network != "" {
		hc.NetworkMode = ctypes.NetworkMode(s.Network)
		nc = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{s.Network: {Aliases: s.Aliases}}}
	}
	res, err := e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, NetworkingConfig: nc, Name: s.Name})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("create container from %s: %w: %s", s.Image, ErrImageNotFound, oneLine(err.Error()))
		}
		return "", fmt.Errorf("create container from %s: %s", s.Image, oneLine(err.Error()))
	}
	if _, err := e.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = e.Remove(rctx, res.ID)
		return "", fmt.Errorf("start container from %s: %s", s.Image, oneLine(err.Error()))
	}
	return res.ID, nil
}

// State is what [Engine.Inspect] reports of a container.
type State struct {
	Running  bool
	ExitCode int
	// Status is the container's status, such as running or exited.
	Status string
	// Health is "" when the container has no health check, else starting,
	// healthy or unhealthy.
	Health string
	// HealthOutput is the output of the last health check.
	HealthOutput string
	// Ports maps a container port ("80/tcp") to its published host port.
	Ports map[string]int
	// IP is the container's address on the job network, if any.
	IP string
	// OOMKilled reports whether the kernel killed it for memory.
	OOMKilled bool
}

// Inspect returns the container's state, health and published ports.
func (e *Engine) Inspect(ctx context.Context, id string) (State, error) {
	res, err := e.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return State{}, fmt.Errorf("inspect container %s: %w", short(id), err)
	}
	c := res.Container
	st := State{Ports: map[string]int{}}
	if c.State != nil {
		st.Running, st.ExitCode, st.Status, st.OOMKilled = c.State.Running, c.State.ExitCode, string(c.State.Status), c.State.OOMKilled
		if h := c.State.Health; h != nil {
			st.Health = string(h.Status)
			if n := len(h.Log); n > 0 && h.Log[n-1] != nil {
				st.HealthOutput = strings.TrimSpace(h.Log[n-1].Output)
			}
		}
	}
	if ns := c.NetworkSettings; ns != nil {
		for p, bs := range ns.Ports {
			for _, b := range bs {
				if n, err := strconv.Atoi(b.HostPort); err == nil && n > 0 {
					st.Ports[p.String()] = n
					break
				}
			}
		}
		for _, ep := range ns.Networks {
			if ep != nil && ep.IPAddress.IsValid() {
				st.IP = ep.IPAddress.String()
			}
		}
	}
	return st, nil
}

// UnhealthyError is returned by [Engine.WaitHealthy] for a container that
// did not become healthy.
type UnhealthyError struct {
	// Reason says what happened: "exited with code 1", "unhealthy", or
	// "still starting after 2m0s".
	Reason string
	// HealthOutput is the last health check's output, if any.
	HealthOutput string
}

func (e *UnhealthyError) Error() string {
	msg := e.Reason
	if e.HealthOutput != "" {
		msg += "; last health check output: " + oneLine(e.HealthOutput)
	}
	return msg
}

// WaitHealthy polls the container every interval until it is healthy (or,
// with no health check, running) and returns nil; or returns an
// [*UnhealthyError] once it has exited, is unhealthy, or ctx ends.
func (e *Engine) WaitHealthy(ctx context.Context, id string, interval time.Duration) error {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var last State
	for {
		st, err := e.Inspect(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return &UnhealthyError{Reason: "did not become healthy in time (" + last.Health + ")", HealthOutput: last.HealthOutput}
			}
			return err
		}
		last = st
		switch {
		case !st.Running:
			reason := fmt.Sprintf("exited with code %d", st.ExitCode)
			if st.OOMKilled {
				reason += " (killed for using more memory than its limit)"
			}
			return &UnhealthyError{Reason: reason, HealthOutput: st.HealthOutput}
		case st.Health == "" || st.Health == string(ctypes.NoHealthcheck) || st.Health == string(ctypes.Healthy):
			return nil
		case st.Health == string(ctypes.Unhealthy):
			return &UnhealthyError{Reason: "is unhealthy", HealthOutput: st.HealthOutput}
		}
		select {
		case <-ctx.Done():
			return &UnhealthyError{Reason: "did not become healthy in time (still " + st.Health + ")", HealthOutput: st.HealthOutput}
		case <-t.C:
		}
	}
}

// Logs copies the last tail lines (0: all) of the container's stdout and
// stderr to w.
func (e *Engine) Logs(ctx context.Context, id string, tail int, w io.Writer) error {
	t := "all"
	if tail > 0 {
		t = strconv.Itoa(tail)
	}
	rc, err := e.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: t})
	if err != nil {
		return fmt.Errorf("logs of container %s: %w", short(id), err)
	}
	defer rc.Close()
	if _, err := stdcopy.StdCopy(w, w, rc); err != nil {
		return fmt.Errorf("logs of container %s: %w", short(id), err)
	}
	return nil
}

// Exec runs cmd in the running container with env and working directory,
// copies its stdout to stdout and its stderr to stderr (which may be the
// same writer), and returns its exit code. When ctx
// ends the exec's output stream is closed; the process itself is left to
// the container's removal.
func (e *Engine) Exec(ctx context.Context, id string, cmd, env []string, dir, user string, stdout, stderr io.Writer) (int, error) {
	cr, err := e.cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, Env: env, WorkingDir: dir, User: user, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: %w", short(id), err)
	}
	at, err := e.cli.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: attach: %w", short(id), err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, at.Reader)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		at.Close()
		<-done
		return -1, context.Cause(ctx)
	}
	at.Close()
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: read output: %w", short(id), err)
	}
	ins, err := e.cli.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: %w", short(id), err)
	}
	return ins.ExitCode, nil
}

// Remove kills and removes a container with its anonymous volumes. A
// container that is already gone is not an error, and one that someone
// else is removing (a daemon killed in the middle of its cleanup, whose
// request the Engine still carries out) is waited for until it is gone:
// until then it holds its network, whose removal would fail.
//
// The Engine's wait for removal is not relied on alone: Docker 20.10, under
// load, once left it unanswered for minutes after the other removal had
// finished (moby's clients report the same race), and a removal that fails
// leaves the container behind. So each wait is bounded (100 ms, doubling to
// 2 s) and followed by another removal, which finds the container gone
// (404), still being removed (409: wait again), or removes it.
func (e *Engine) Remove(ctx context.Context, id string) error {
	b := backoff.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for {
		_, err := e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil || cerrdefs.IsNotFound(err):
			return nil
		case !cerrdefs.IsConflict(err) || !strings.Contains(err.Error(), "already in progress"):
			return fmt.Errorf("remove container %s: %w", short(id), err)
		}
		if e.removedWithin(ctx, id, b.Next()) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for container %s, which another caller is removing, to be gone: %w", short(id), ctx.Err())
		}
	}
}

// removedWithin waits at most d for container id to be removed and reports
// whether the Engine said it was. A removal that failed, or a wait that ran
// out, reports false.
func (e *Engine) removedWithin(ctx context.Context, id string, d time.Duration) bool {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	w := e.cli.ContainerWait(wctx, id, client.ContainerWaitOptions{Condition: ctypes.WaitConditionRemoved})
	select {
	case res := <-w.Result:
		return res.Error == nil || res.Error.Message == ""
	case err := <-w.Error:
		return cerrdefs.IsNotFound(err)
	}
}

// object is one container, network or volume of this Engine's owner.
type object struct {
	kind, id, name string
}

// owned lists this owner's containers, networks and volumes for job, or
// for every job when job is "", containers first (they hold the others).
func (e *Engine) owned(ctx context.Context, job string) ([]object, error) {
	f := client.Filters{}.Add("label", LabelOwner+"="+e.owner)
	if job != "" {
		f.Add("label", LabelJob+"="+job)
	}
	var out []object
	cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		out = append(out, object{"container", c.ID, strings.TrimPrefix(strings.Join(c.Names, ","), "/")})
	}
	nets, err := e.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, nw := range nets.Items {
		out = append(out, object{"network", nw.ID, nw.Name})
	}
	vols, err := e.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vols.Items {
		out = append(out, object{"volume", v.Name, v.Name})
	}
	return out, nil
}

// Reap removes every container, network and volume this Engine's owner
// created for job, or for every job when job is "". It returns how many
// objects it removed and every error it met.
func (e *Engine) Reap(ctx context.Context, job string) (int, error) {
	objs, err := e.owned(ctx, job)
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, o := range objs {
		switch o.kind {
		case "container":
			err = e.Remove(ctx, o.id)
		case "network":
			_, err = e.cli.NetworkRemove(ctx, o.id, client.NetworkRemoveOptions{})
		default:
			_, err = e.cli.VolumeRemove(ctx, o.id, client.VolumeRemoveOptions{Force: true})
		}
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove %s %s: %w", o.kind, o.name, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Objects lists this owner's containers, networks and volumes for job (""
// for all) as "kind name", sorted, for checks and messages.
func (e *Engine) Objects(ctx context.Context, job string) ([]string, error) {
	objs, err := e.owned(ctx, job)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.kind+" "+o.name)
	}
	sort.Strings(out)
	return out, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// oneLine folds an Engine message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
