package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// Build describes an image to build with [Engine.Build].
type Build struct {
	// Context is the build context: a tar stream, read once.
	Context io.Reader
	// Dockerfile is the Dockerfile's path inside the context.
	Dockerfile string
	// Tag names the image built.
	Tag string
	// Labels are labels of the image, beside [LabelOwner] with the
	// Engine's owner.
	Labels map[string]string
	// Network lets RUN instructions reach the network (the Engine's
	// default bridge). Default false: they run with network mode none.
	Network bool
}

// Build builds an image with the Engine's classic builder, which reads
// no # syntax= directive (BuildKit would pull the front end it names),
// never pulls a base image that is missing (PullParent off: the caller
// makes the bases it allows present first), and removes its intermediate
// containers whatever happens. The builder's output (its "Step 1/4 :"
// lines and what RUN instructions print) is copied to out as it comes.
// When ctx ends the request is closed, which stops the build.
func (e *Engine) Build(ctx context.Context, b Build, out io.Writer) error {
	mode := "none"
	if b.Network {
		mode = "default"
	}
	res, err := e.cli.ImageBuild(ctx, b.Context, client.ImageBuildOptions{
		Tags:        []string{b.Tag},
		Dockerfile:  b.Dockerfile,
		Remove:      true,
		ForceRemove: true,
		NetworkMode: mode,
		Labels:      e.imageLabels(b.Labels),
		Version:     build.BuilderV1,
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("build image %s: %w", b.Tag, context.Cause(ctx))
		}
		return fmt.Errorf("build image %s: %s", b.Tag, oneLine(err.Error()))
	}
	defer res.Body.Close()
	if err := copyBuildOutput(res.Body, out); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("build image %s: %w", b.Tag, context.Cause(ctx))
		}
		return fmt.Errorf("build image %s: %w", b.Tag, err)
	}
	return nil
}

// imageLabels are the labels of an image the Engine builds: extra, and
// the owner's, which wins. Images carry no job: they outlive it.
func (e *Engine) imageLabels(extra map[string]string) map[string]string {
	l := map[string]string{}
	for k, v := range extra {
		l[k] = v
	}
	l[LabelOwner] = e.owner
	return l
}

// copyBuildOutput copies the text of a build's JSON message stream to out
// and returns the error the stream ends with, if any.
func copyBuildOutput(r io.Reader, out io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the builder's output: %w", err)
		}
		switch {
		case m.ErrorDetail.Message != "":
			return errors.New(oneLine(m.ErrorDetail.Message))
		case m.Error != "":
			return errors.New(oneLine(m.Error))
		case m.Stream != "":
			if _, err := io.WriteString(out, m.Stream); err != nil {
				return err
			}
		case m.Status != "":
			if _, err := io.WriteString(out, m.Status+"\n"); err != nil {
				return err
			}
		}
	}
}

// Image is what [Engine.Image] reports of an image.
type Image struct {
	// ID is the image's id, sha256:...
	ID string
	// OnBuild are its ONBUILD triggers, which a build FROM it runs.
	OnBuild []string
}

// Image returns the id and ONBUILD triggers of the image ref on the
// Engine, or an error wrapping [ErrImageNotFound] when it has none of
// that name.
func (e *Engine) Image(ctx context.Context, ref string) (Image, error) {
	res, err := e.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Image{}, fmt.Errorf("image %s: %w on the Docker Engine", ref, ErrImageNotFound)
		}
		return Image{}, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	img := Image{ID: res.ID}
	if res.Config != nil {
		img.OnBuild = res.Config.OnBuild
	}
	return img, nil
}

// FollowLogs copies the container's stdout and stderr to w as it writes
// them, from its start until it exits (or ctx ends).
func (e *Engine) FollowLogs(ctx context.Context, id string, w io.Writer) error {
	rc, err := e.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return fmt.Errorf("logs of container %s: %w", short(id), err)
	}
	defer rc.Close()
	if _, err := stdcopy.StdCopy(w, w, rc); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("logs of container %s: %w", short(id), err)
	}
	return nil
}
