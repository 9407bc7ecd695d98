package jobrun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// Containers is what a job needs of the Docker Engine.
type Containers interface {
	EnsureImage(ctx context.Context, ref string, p container.PullPolicy, a *container.Auth) error
	CreateNetwork(ctx context.Context, job, name string) (string, error)
	CreateVolume(ctx context.Context, job, name string) error
	Start(ctx context.Context, s container.Spec) (string, error)
	Inspect(ctx context.Context, id string) (container.State, error)
	WaitHealthy(ctx context.Context, id string, interval time.Duration) error
	Logs(ctx context.Context, id string, tail int, w io.Writer) error
	FollowLogs(ctx context.Context, id string, w io.Writer) error
	Image(ctx context.Context, ref string) (container.Image, error)
	Build(ctx context.Context, b container.Build, out io.Writer) error
	Stats(ctx context.Context, id string, fn func(container.Sample)) error
	Exec(ctx context.Context, id string, cmd, env []string, dir, user string, stdout, stderr io.Writer) (int, error)
	Reap(ctx context.Context, job string) (int, error)
	Remove(ctx context.Context, id string) error
}

var _ Containers = (*container.Engine)(nil)

// Defaults for the container options.
const (
	// DefaultServiceTimeout bounds the wait for the job's services to
	// become healthy, all together.
	DefaultServiceTimeout = 5 * time.Minute
	// containerCleanupTimeout bounds the removal of a job's containers.
	containerCleanupTimeout = 30 * time.Second
	// serviceLogTail is how many lines of a failed service's log go into
	// the job log.
	serviceLogTail = 100
)

// service is one running service container of a job.
type service struct {
	id, image string
	cid       string
	ports     map[string]int // "8080/tcp" -> host port
	ip        string
}

// needsContainers reports whether the job uses the Docker Engine.
func (j *job) needsContainers() bool {
	return len(j.wf.Job.Services) > 0 || j.jobImage() != nil
}

// jobImage is the job container to run steps in: container:, else the
// runner label the job's runs-on matched when it is a docker:// label.
func (j *job) jobImage() *workflow.Container {
	if c := j.wf.Job.Container; c != nil {
		return c
	}
	for _, want := range j.wf.Job.RunsOn {
		for _, s := range j.deps.Labels {
			if l, err := config.ParseLabel(s); err == nil && l.Schema == config.SchemaDocker && l.Name == want {
				return &workflow.Container{Image: l.Arg}
			}
		}
	}
	return nil
}

// startContainers starts the job's network, services and job container,
// and waits until every service is healthy. Everything it made is removed
// by stopContainers, whatever happened.
func (j *job) startContainers(ctx context.Context) error {
	eng := j.deps.Containers
	if eng == nil {
		why := "no Docker Engine was reachable when the daemon started"
		if j.deps.ContainersErr != nil {
			why = j.deps.ContainersErr.Error()
		}
		return fmt.Errorf("this job has services: or a job container, which need a Docker Engine, and this runner has none (%s); run the job on a runner with Docker, or remove its services and container", why)
	}
	ec := j.exprContext(workflow.StatusSuccess)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	j.ctrKey = fmt.Sprintf("forgeload-%d-%s", j.task.GetId(), hex.EncodeToString(b))

	plan, err := j.planContainers(ec)
	if err != nil {
		return err
	}
	if err := j.pullImages(ctx, eng, plan); err != nil {
		return err
	}
	netID, err := eng.CreateNetwork(ctx, j.ctrKey, j.ctrKey)
	if err != nil {
		return fmt.Errorf("services: %w", err)
	}
	j.ctrNetwork = j.ctrKey
	for _, v := range plan.volumes {
		if err := eng.CreateVolume(ctx, j.ctrKey, v); err != nil {
			return err
		}
	}
	if err := j.startServices(ctx, eng, netID, plan.services); err != nil {
		return err
	}
	if err := j.waitServices(ctx, eng, plan.services); err != nil {
		return err
	}
	if plan.job != nil {
		return j.startJobContainer(ctx, eng, netID, plan.job)
	}
	return nil
}

// containerPlan is every container of a job, built and checked before
// anything is created: a bad option leaves nothing behind.
type containerPlan struct {
	services []plannedContainer
	job      *plannedContainer // the job container, or nil
	volumes  []string          // the named volumes they use
}

// plannedContainer is one container of a containerPlan.
type plannedContainer struct {
	id   string
	spec container.Spec
	auth *container.Auth
}

// planContainers builds the spec of every service and of the job
// container, and checks every option.
func (j *job) planContainers(ec *workflow.Context) (*containerPlan, error) {
	plan := &containerPlan{}
	for _, id := range j.wf.Job.ServiceIDs() {
		spec, auth, vols, err := j.containerSpec(ec, "services."+id, j.wf.Job.Services[id])
		if err != nil {
			return nil, err
		}
		spec.Name = j.ctrKey + "-" + id
		spec.Aliases = append(spec.Aliases, id)
		plan.services = append(plan.services, plannedContainer{id, spec, auth})
		plan.volumes = append(plan.volumes, vols...)
	}
	if c := j.jobImage(); c != nil {
		spec, auth, vols, err := j.containerSpec(ec, "container", c)
		if err != nil {
			return nil, err
		}
		if len(spec.Ports) > 0 {
			return nil, fmt.Errorf("container.ports: the job container publishes no ports here; move what listens into a service of its own")
		}
		spec.Name = j.ctrKey + "-job"
		// The job container idles; steps run in it with exec. The task
		// directory is mounted at the same path, so every GITHUB_* file
		// and the workspace have the same names inside and out.
		spec.Entrypoint = []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 1; done"}
		spec.Cmd = nil
		spec.Binds = append(spec.Binds, j.dir+":"+j.dir)
		spec.WorkingDir = j.ws
		plan.job = &plannedContainer{spec: spec, auth: auth}
		plan.volumes = append(plan.volumes, vols...)
	}
	return plan, nil
}

// pullImages makes sure every image of the plan is on the Engine.
func (j *job) pullImages(ctx context.Context, eng Containers, plan *containerPlan) error {
	for _, p := range plan.services {
		if err := j.pullImage(ctx, eng, "service "+p.id, p.spec.Image, p.auth); err != nil {
			return err
		}
	}
	if plan.job != nil {
		if err := j.pullImage(ctx, eng, "job container", plan.job.spec.Image, plan.job.auth); err != nil {
			return err
		}
	}
	return nil
}

// startServices starts every service container on the job's network.
func (j *job) startServices(ctx context.Context, eng Containers, netID string, plans []plannedContainer) error {
	j.services = map[string]*service{}
	for _, p := range plans {
		p.spec.Network = netID
		cid, err := eng.Start(ctx, p.spec)
		if err != nil {
			return fmt.Errorf("service %s: %w", p.id, err)
		}
		j.services[p.id] = &service{id: p.id, image: p.spec.Image, cid: cid}
		j.rep.Logf(-1, "service %s: started %s", p.id, p.spec.Image)
	}
	return nil
}

// waitServices waits, within container.service_timeout for all of them,
// until every service is healthy, and reads its ports and address; a
// service that is not gets the end of its log in the job log.
func (j *job) waitServices(ctx context.Context, eng Containers, plans []plannedContainer) error {
	wctx, cancel := context.WithTimeout(ctx, j.deps.ServiceTimeout)
	defer cancel()
	for _, p := range plans {
		s := j.services[p.id]
		if err := eng.WaitHealthy(wctx, s.cid, time.Second); err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			j.serviceLogs(eng, s)
			var ue *container.UnhealthyError
			if errors.As(err, &ue) && wctx.Err() != nil {
				return fmt.Errorf("service %s (%s) did not become healthy within %s: %w; fix its health check or the service, or raise container.service_timeout in the runner config", p.id, s.image, j.deps.ServiceTimeout, err)
			}
			return fmt.Errorf("service %s (%s) %w", p.id, s.image, err)
		}
		st, err := eng.Inspect(ctx, s.cid)
		if err != nil {
			return fmt.Errorf("service %s: %w", p.id, err)
		}
		s.ports, s.ip = st.Ports, st.IP
		j.rep.Logf(-1, "service %s is ready%s", p.id, describePorts(s.ports))
	}
	return nil
}

// startJobContainer starts the job container on the job's network; the
// job's steps run in it from then on.
func (j *job) startJobContainer(ctx context.Context, eng Containers, netID string, p *plannedContainer) error {
	p.spec.Network = netID
	cid, err := eng.Start(ctx, p.spec)
	if err != nil {
		return fmt.Errorf("job container: %w", err)
	}
	j.jobCtr = cid
	j.jobCtrUser = p.spec.User
	j.jobCtrImage = p.spec.Image
	j.probeJobContainer(ctx)
	j.rep.Logf(-1, "job container: run: steps run in %s", p.spec.Image)
	return nil
}

func (j *job) pullImage(ctx context.Context, eng Containers, what, ref string, auth *container.Auth) error {
	if err := eng.EnsureImage(ctx, ref, j.deps.PullPolicy, auth); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// containerSpec evaluates a services:/container: entry into a Spec, with
// its registry login and the named volumes it uses.
func (j *job) containerSpec(ec *workflow.Context, path string, c *workflow.Container) (container.Spec, *container.Auth, []string, error) {
	e := specEval{ec: ec, path: path}
	spec, vols, err := j.specFields(e, c)
	if err != nil {
		return container.Spec{}, nil, nil, err
	}
	opts, err := e.in("options", c.Options)
	if err != nil {
		return container.Spec{}, nil, nil, err
	}
	if err := spec.ApplyOptions(opts, j.deps.OptionsPolicy); err != nil {
		return container.Spec{}, nil, nil, e.fail("%v", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	// volumes: and --volume options pass the same checks.
	vols = append(vols, spec.Binds...)
	spec.Binds = nil
	named, err := j.specVolumes(e, &spec, vols)
	if err != nil {
		return container.Spec{}, nil, nil, err
	}
	auth, err := j.specAuth(e, c.Credentials)
	if err != nil {
		return container.Spec{}, nil, nil, err
	}
	return spec, auth, named, nil
}

// specEval evaluates the fields of the services:/container: entry at path,
// its errors naming the field.
type specEval struct {
	ec   *workflow.Context
	path string
}

// in interpolates the value v of field.
func (e specEval) in(field, v string) (string, error) {
	out, err := e.ec.Interpolate(v)
	if err != nil {
		return "", fmt.Errorf("%s.%s: %w", e.path, field, err)
	}
	return out, nil
}

// fail is an error about the entry.
func (e specEval) fail(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{e.path}, args...)...)
}

// specFields evaluates the entry's image, env, ports and cmd into a Spec,
// and returns its volumes: evaluated but not yet checked.
func (j *job) specFields(e specEval, c *workflow.Container) (container.Spec, []string, error) {
	img, err := e.in("image", c.Image)
	if err != nil {
		return container.Spec{}, nil, err
	}
	if strings.TrimSpace(img) == "" {
		return container.Spec{}, nil, e.fail("image is empty after evaluating %q; set it to an image such as postgres:16", c.Image)
	}
	spec := container.Spec{Job: j.ctrKey, Image: strings.TrimSpace(img)}
	for _, k := range sortedKeys(c.Env) {
		v, err := e.in("env."+k, c.Env[k])
		if err != nil {
			return container.Spec{}, nil, err
		}
		spec.Env = append(spec.Env, k+"="+v)
	}
	for i, p := range c.Ports {
		v, err := e.in(fmt.Sprintf("ports[%d]", i), p)
		if err != nil {
			return container.Spec{}, nil, err
		}
		port, err := parsePort(v)
		if err != nil {
			return container.Spec{}, nil, e.fail("ports[%d]: %v", i, err)
		}
		spec.Ports = append(spec.Ports, port)
	}
	var vols []string
	for i, v := range c.Volumes {
		v, err := e.in(fmt.Sprintf("volumes[%d]", i), v)
		if err != nil {
			return container.Spec{}, nil, err
		}
		vols = append(vols, v)
	}
	for i, a := range c.Cmd {
		v, err := e.in(fmt.Sprintf("cmd[%d]", i), a)
		if err != nil {
			return container.Spec{}, nil, err
		}
		spec.Cmd = append(spec.Cmd, v)
	}
	return spec, vols, nil
}

// specVolumes checks every volume of the entry, sets spec's binds and
// returns the named volumes among them.
func (j *job) specVolumes(e specEval, spec *container.Spec, vols []string) ([]string, error) {
	var named []string
	for i, v := range vols {
		bind, name, err := j.checkVolume(v)
		if err != nil {
			return nil, e.fail("volumes[%d]: %v", i, err)
		}
		spec.Binds = append(spec.Binds, bind)
		if name != "" {
			named = append(named, name)
		}
	}
	return named, nil
}

// specAuth evaluates the entry's credentials: into a registry login, the
// password masked; nil without credentials.
func (j *job) specAuth(e specEval, cr *workflow.Credentials) (*container.Auth, error) {
	if cr == nil {
		return nil, nil
	}
	u, err := e.in("credentials.username", cr.Username)
	if err != nil {
		return nil, err
	}
	pw, err := e.in("credentials.password", cr.Password)
	if err != nil {
		return nil, err
	}
	if pw != "" {
		j.rep.AddMask(pw)
	}
	return &container.Auth{Username: u, Password: pw}, nil
}

// checkVolume checks one volumes: entry and returns the bind to give the
// Engine and, for a named volume, its name. A host path and a named volume
// must match one of the admin's container.valid_volumes globs (a named
// volume may hold another job's data, or the runner's own .runner); a
// relative path (./data) is inside the workspace and must stay there,
// symlinks resolved.
func (j *job) checkVolume(v string) (bind, name string, err error) {
	src, rest, ok := strings.Cut(v, ":")
	if !ok {
		// An anonymous volume: removed with its container.
		if !strings.HasPrefix(v, "/") {
			return "", "", fmt.Errorf("%q: want name:/path, /host/path:/path or /path", v)
		}
		return v, "", nil
	}
	dst, mode, _ := strings.Cut(rest, ":")
	if src == "" || !strings.HasPrefix(dst, "/") {
		return "", "", fmt.Errorf("%q: want name:/path or /host/path:/path", v)
	}
	if err := checkVolumeMode(mode); err != nil {
		return "", "", fmt.Errorf("%q: %w", v, err)
	}
	switch {
	case strings.HasPrefix(src, "."):
		abs, err := filepath.EvalSymlinks(filepath.Join(j.ws, src))
		if err != nil {
			return "", "", fmt.Errorf("%q: %s is not in the workspace: %w", v, src, err)
		}
		if ws, _ := filepath.EvalSymlinks(j.ws); abs != ws && !strings.HasPrefix(abs, ws+string(filepath.Separator)) {
			return "", "", fmt.Errorf("%q: %s leads out of the workspace; mount a path inside it", v, src)
		}
		return abs + ":" + rest, "", nil
	case strings.HasPrefix(src, "/"):
		if j.validVolume(filepath.Clean(src)) {
			return filepath.Clean(src) + ":" + rest, "", nil
		}
		return "", "", fmt.Errorf("%q: host path %s is not allowed on this runner: use a path in the workspace (./dir:/path), or ask the runner's admin to add it to container.valid_volumes", v, src)
	}
	if !j.validVolume(src) {
		return "", "", fmt.Errorf("%q: named volume %s is not allowed on this runner: a volume outlives the job and may hold another job's data or the runner's own; share files between the job's containers through the workspace (.:/path mounts it), or ask the runner's admin to add %s to container.valid_volumes", v, src, src)
	}
	return v, src, nil
}

// validVolume reports whether a host path or volume name matches one of
// the admin's container.valid_volumes globs.
func (j *job) validVolume(src string) bool {
	for _, g := range j.deps.ValidVolumes {
		if ok, _ := path.Match(g, src); ok {
			return true
		}
	}
	return false
}

// volumeModes are the docker -v modes a job may give. shared and rshared
// are not among them: they would let mounts made in the container appear
// on the host.
var volumeModes = map[string]bool{"ro": true, "rw": true, "z": true, "Z": true, "nocopy": true, "private": true, "rprivate": true, "slave": true, "rslave": true}

func checkVolumeMode(mode string) error {
	if mode == "" {
		return nil
	}
	for m := range strings.SplitSeq(mode, ",") {
		if !volumeModes[m] {
			return fmt.Errorf("mode %q is not allowed (want ro or rw, optionally with z, Z, nocopy, private, rprivate, slave or rslave; shared propagation would let the container's mounts reach the host)", m)
		}
	}
	return nil
}

// parsePort reads a ports: entry: 8080, 9000:8080 or 127.0.0.1:9000:8080,
// with an optional /tcp or /udp. Host ports bind to 127.0.0.1 unless an
// address is given.
func parsePort(s string) (container.Port, error) {
	s = strings.TrimSpace(s)
	spec, proto, _ := strings.Cut(s, "/")
	if proto != "" && proto != "tcp" && proto != "udp" && proto != "sctp" {
		return container.Port{}, fmt.Errorf("%q: protocol %q is not tcp, udp or sctp", s, proto)
	}
	var p container.Port
	parts := strings.Split(spec, ":")
	if i := strings.LastIndex(spec, "]:"); strings.HasPrefix(spec, "[") && i > 0 {
		parts = append([]string{spec[1:i]}, strings.Split(spec[i+2:], ":")...)
	}
	num := func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return 0, fmt.Errorf("%q: %q is not a port number (1-65535)", s, v)
		}
		return n, nil
	}
	var err error
	switch len(parts) {
	case 3:
		if p.HostIP, err = netip.ParseAddr(parts[0]); err != nil {
			return p, fmt.Errorf("%q: %q is not an IP address", s, parts[0])
		}
		parts = parts[1:]
		fallthrough
	case 2:
		if p.Host, err = num(parts[0]); err != nil {
			return p, err
		}
		parts = parts[1:]
		fallthrough
	case 1:
		n, err := num(parts[0])
		if err != nil {
			return p, err
		}
		p.Container = strconv.Itoa(n)
		if proto != "" {
			p.Container += "/" + proto
		}
	default:
		return p, fmt.Errorf("%q: want 8080, 9000:8080 or 127.0.0.1:9000:8080", s)
	}
	return p, nil
}

func describePorts(ports map[string]int) string {
	if len(ports) == 0 {
		return ""
	}
	keys := make([]string, 0, len(ports))
	for k := range ports {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s on 127.0.0.1:%d", k, ports[k]))
	}
	return ": " + strings.Join(parts, ", ")
}

// serviceLogs copies the end of a failed service's log into the job log.
func (j *job) serviceLogs(eng Containers, s *service) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(j.rep.Context()), 10*time.Second)
	defer cancel()
	var buf bytes.Buffer
	if err := eng.Logs(ctx, s.cid, serviceLogTail, &buf); err != nil {
		j.rep.Logf(-1, "service %s: could not read its log: %v", s.id, err)
		return
	}
	j.rep.Logf(-1, "service %s: the last %d lines of its log:", s.id, serviceLogTail)
	for line := range strings.SplitSeq(strings.TrimRight(buf.String(), "\n"), "\n") {
		j.rep.Logf(-1, "  %s | %s", s.id, line)
	}
}

// reportExitedServices logs, with the end of its log, every service that
// stopped while the job ran (a crash under load is worth seeing). It runs
// before the job's log is closed.
func (j *job) reportExitedServices() {
	eng := j.deps.Containers
	if eng == nil || j.ctrKey == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range j.wf.Job.ServiceIDs() {
		s := j.services[id]
		if s == nil || s.ports == nil {
			continue // never became ready: already reported
		}
		st, err := eng.Inspect(ctx, s.cid)
		if err != nil || st.Running {
			continue
		}
		reason := fmt.Sprintf("exited with code %d", st.ExitCode)
		if st.OOMKilled {
			reason += ", killed for using more memory than its limit"
		}
		j.rep.Logf(-1, "::warning::service %s (%s) stopped during the job (%s)", id, s.image, reason)
		j.serviceLogs(eng, s)
	}
}

// stopContainers removes every container, network and volume of the job.
// It runs at the job's end whatever happened, on a context of its own.
func (j *job) stopContainers() {
	eng := j.deps.Containers
	if eng == nil || j.ctrKey == "" {
		return
	}
	j.releaseWorkspace()
	ctx, cancel := context.WithTimeout(context.Background(), containerCleanupTimeout)
	defer cancel()
	if _, err := eng.Reap(ctx, j.ctrKey); err != nil {
		j.deps.Logger.WithError(err).WithField("job", j.ctrKey).Warn("remove the job's containers")
	}
	j.ctrKey = ""
}

// jobContext is the job context's services and container keys.
func (j *job) jobContext() map[string]any {
	if j.ctrKey == "" {
		return nil
	}
	svcs := map[string]any{}
	for id, s := range j.services {
		ports := map[string]any{}
		for p, hp := range s.ports {
			ports[strings.TrimSuffix(p, "/tcp")] = strconv.Itoa(hp)
		}
		svcs[id] = map[string]any{"id": s.cid, "network": j.ctrNetwork, "ports": ports}
	}
	m := map[string]any{"services": svcs}
	if j.jobCtr != "" {
		m["container"] = map[string]any{"id": j.jobCtr, "network": j.ctrNetwork}
	}
	return m
}
