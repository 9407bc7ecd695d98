package cmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// dockerLabels returns the labels that need a Docker Engine (name:docker://image).
func dockerLabels(labels []string) []string {
	var out []string
	for _, s := range labels {
		if l, err := config.ParseLabel(s); err == nil && l.Schema == config.SchemaDocker {
			out = append(out, s)
		}
	}
	return out
}

// needsContainers reports whether a job payload has services:, a
// container:, a step that uses a docker:// image or an action (which may
// be a Docker action: only its metadata tells), or runs on one of labels
// that is a docker:// label.
func needsContainers(payload []byte, labels []string) bool {
	wf, err := workflow.Parse(payload)
	if err != nil {
		return false // the job fails on its own parse error
	}
	if len(wf.Job.Services) > 0 || wf.Job.Container != nil {
		return true
	}
	if slices.ContainsFunc(wf.Job.Steps, func(st workflow.Step) bool { return st.Uses != "" && !jobrun.IsNative(st.Uses) }) {
		return true
	}
	for _, l := range dockerLabels(labels) {
		name, _, _ := strings.Cut(l, ":")
		if slices.Contains(wf.Job.RunsOn, name) {
			return true
		}
	}
	return false
}

// connectEngine connects to the Docker Engine of the container section,
// with owner as the label of everything it creates. The error says why no
// Engine can be used.
func connectEngine(ctx context.Context, cfg *config.Config, owner string) (*container.Engine, error) {
	return container.New(ctx, container.Options{Host: cfg.Container.DockerHost, Owner: owner})
}

// startEngine connects the daemon to the Docker Engine and removes what a
// daemon of this registration that was killed left behind. With no Engine,
// the docker:// labels are dropped from labels (each with an error line
// saying why) and the returned error is the reason, for jobs that need
// containers; host jobs are served as usual. It fails only when no label
// would be left.
func startEngine(ctx context.Context, cfg *config.Config, owner string, labels []string, log *logrus.Entry) (*container.Engine, []string, error, error) {
	eng, err := connectEngine(ctx, cfg, owner)
	if err != nil {
		dl := dockerLabels(labels)
		if len(dl) == 0 {
			log.WithError(err).Info("no Docker Engine: jobs with services: or container: will fail; host jobs run as usual")
			return nil, labels, err, nil
		}
		kept := slices.DeleteFunc(slices.Clone(labels), func(l string) bool { return slices.Contains(dl, l) })
		for _, l := range dl {
			log.Errorf("runner label %q is not offered: it runs jobs in a container, and %v", l, err)
		}
		if len(kept) == 0 {
			return nil, nil, err, fmt.Errorf("every runner label needs a Docker Engine, and %w; start Docker or add a host label to runner.labels", err)
		}
		return nil, kept, err, nil
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, rerr := eng.Reap(rctx, "")
	if rerr != nil {
		log.WithError(rerr).Warn("could not remove every container left by an earlier run of this runner")
	}
	if n > 0 {
		log.Infof("removed %d containers, networks and volumes left behind by an earlier run of this runner", n)
	}
	return eng, labels, nil, nil
}

// stopEngine removes whatever the daemon's jobs left and closes the client.
func stopEngine(eng *container.Engine, log *logrus.Entry) {
	if eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := eng.Reap(ctx, ""); err != nil {
		log.WithError(err).Warn("remove the jobs' containers at shutdown")
	}
	_ = eng.Close()
}
