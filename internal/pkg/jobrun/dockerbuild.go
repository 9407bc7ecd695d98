package jobrun

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/container"
	"github.com/forgeload/forgeload/internal/pkg/jobfile"
	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// Bounds of a Docker action's image build.
const (
	// MaxActionContextBytes bounds the build context of a Docker action
	// built from its Dockerfile: the files of the action's directory.
	MaxActionContextBytes = 64 << 20
	// maxActionContextFiles bounds how many entries it has.
	maxActionContextFiles = 10000
	// DefaultBuildTimeout bounds one build (within the step's and the
	// job's own timeouts) unless Config.BuildTimeout says otherwise.
	DefaultBuildTimeout = 10 * time.Minute
	// actionImageRepo is the repository of the images built for actions,
	// tagged by what went into them.
	actionImageRepo = "forgeload-action"
	// labelAction, on an image built for an action, names the action.
	labelAction = "io.forgeload.action"
)

// actionBuild is a Docker action whose image is built from its
// Dockerfile: runs.image, relative to the action's directory.
type actionBuild struct {
	uses  string // the uses: that names the action
	file  string // its action.yml, for messages
	dir   string // the action's directory: the build context
	image string // runs.image as written
}

// isDockerImage reports whether a Docker action's runs.image names an
// image (docker://name:tag) rather than a Dockerfile to build.
func isDockerImage(image string) bool {
	return strings.HasPrefix(image, "docker://")
}

// readActionDockerfile reads and checks the Dockerfile runs.image names,
// inside the action's directory dir (a directory of the task directory):
// no path out of it, no symlink leading out, at most 1 MiB. It returns it
// with its path relative to dir (slash-separated).
func (j *job) readActionDockerfile(b *actionBuild) (*dockerfile, string, error) {
	rel, err := jobfile.Rel(b.dir, b.image)
	if err != nil || filepath.IsAbs(b.image) || rel == "." {
		return nil, "", fmt.Errorf("%s: runs.image: %q is not a file inside the action; give the Dockerfile's path relative to action.yml (Dockerfile), or an image (docker://name:tag)", b.file, b.image)
	}
	rel = filepath.ToSlash(rel)
	root, err := j.td.OpenRoot(b.dir)
	if err != nil {
		return nil, "", fmt.Errorf("%s: runs.image: %w", b.file, err)
	}
	defer root.Close()
	data, err := jobfile.ReadIn(root, rel, rel, maxDockerfileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%s: runs.image: %s: no such file in the action's directory; give the Dockerfile's path relative to action.yml, or an image (docker://name:tag)", b.file, rel)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: runs.image: %w", b.file, err)
	}
	df, err := parseDockerfile(rel, data)
	if err != nil {
		return nil, "", fmt.Errorf("%s: runs.image: %w", b.file, err)
	}
	return df, rel, nil
}

// buildActionImage makes the image of the Docker action b and returns
// its tag. Each image the Dockerfile takes from outside (FROM, COPY
// --from) is made available under the runner's pull policy, as a job's
// images are, and named by its id in the Dockerfile the Engine gets, so
// the build pulls nothing else. The context is the action's directory,
// read through the task directory and bounded; the image is tagged by
// the hash of that context (Dockerfile included), so a second use of the
// same action, in this job or a later one, reuses it. The build runs
// without network unless the admin allows it (container.allow_build_network),
// for at most Config.BuildTimeout, its output in the step's log.
func (j *stepJob) buildActionImage(ctx context.Context, eng Containers, b *actionBuild) (string, error) {
	df, rel, err := j.readActionDockerfile(b)
	if err != nil {
		return "", err
	}
	ids := map[string]string{}
	for _, u := range df.images {
		if ids[u.ref] != "" {
			continue
		}
		what := fmt.Sprintf("%s: runs.image: %s:%d: %s %s", b.file, rel, u.line, u.instr, u.ref)
		if err := j.pullImage(ctx, eng, what, u.ref, nil); err != nil {
			return "", err
		}
		img, err := eng.Image(ctx, u.ref)
		if err == nil {
			err = checkOnBuild(img.OnBuild)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		ids[u.ref] = img.ID
	}
	tarball, err := j.actionContext(b, rel, df.rewrite(ids))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "network=%v\n", j.deps.BuildNetwork)
	h.Write(tarball)
	tag := actionImageRepo + ":" + hex.EncodeToString(h.Sum(nil)[:16])
	if _, err := eng.Image(ctx, tag); err == nil {
		j.Logf("[docker] %s: reusing image %s, built before from the same files", b.uses, tag)
		return tag, nil
	} else if !errors.Is(err, container.ErrImageNotFound) {
		return "", err
	}
	network := "none (container.allow_build_network is off)"
	if j.deps.BuildNetwork {
		network = "the Engine's default"
	}
	j.Logf("[docker] %s: building %s from %s (%s of context; network: %s)", b.uses, tag, rel, jobfile.Size(int64(len(tarball))), network)
	bctx, cancel := context.WithTimeoutCause(ctx, j.deps.BuildTimeout, fmt.Errorf("the build took more than %v (container.build_timeout)", j.deps.BuildTimeout))
	defer cancel()
	err = eng.Build(bctx, container.Build{
		Context: bytes.NewReader(tarball), Dockerfile: rel, Tag: tag, Network: j.deps.BuildNetwork,
		Labels: map[string]string{labelAction: b.uses},
	}, j.Writer())
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", fmt.Errorf("%s: runs.image: %s: %w", b.file, rel, err)
	}
	return tag, nil
}

// actionContext is the build context of b: a tar of the action's
// directory, read through the task directory (a symlink is stored as a
// symlink, never followed), with dockerfile in place of the Dockerfile
// at rel. Times and owners are zeroed, so the same files make the same
// tar. More than MaxActionContextBytes or maxActionContextFiles, or a
// file that is not a regular file, directory or symlink, is an error.
func (j *job) actionContext(b *actionBuild, rel string, dockerfile []byte) ([]byte, error) {
	root, err := j.td.OpenRoot(b.dir)
	if err != nil {
		return nil, fmt.Errorf("%s: the build context: %w", b.file, err)
	}
	defer root.Close()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var total int64
	n := 0
	err = fs.WalkDir(root.FS(), ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		if n++; n > maxActionContextFiles {
			return fmt.Errorf("the action's directory has more than %d files; a Docker action's build context is its directory", maxActionContextFiles)
		}
		data, h, err := contextEntry(root, p, de, rel, dockerfile, MaxActionContextBytes-total)
		if err != nil {
			return err
		}
		total += int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the build context: %w", b.file, err)
	}
	return buf.Bytes(), nil
}

// contextEntry is the tar header and content of the entry p of the
// context, whose files may hold at most left more bytes.
func contextEntry(root *os.Root, p string, de fs.DirEntry, rel string, dockerfile []byte, left int64) ([]byte, *tar.Header, error) {
	info, err := de.Info()
	if err != nil {
		return nil, nil, err
	}
	h := &tar.Header{Name: p, Mode: int64(info.Mode().Perm()), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	var data []byte
	switch t := de.Type(); {
	case t.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, p+"/"
	case t&fs.ModeSymlink != 0:
		h.Typeflag = tar.TypeSymlink
		if h.Linkname, err = root.Readlink(p); err != nil {
			return nil, nil, err
		}
	case t.IsRegular():
		h.Typeflag = tar.TypeReg
		if p == path.Clean(rel) {
			data = dockerfile
		} else if data, err = jobfile.ReadIn(root, p, p, max(left, 0)); err != nil {
			if errors.Is(err, jobfile.ErrTooLarge) {
				return nil, nil, fmt.Errorf("the action's directory holds more than %s; a Docker action's build context is its directory, and this runner builds at most that", jobfile.Size(MaxActionContextBytes))
			}
			return nil, nil, err
		}
		h.Size = int64(len(data))
	default:
		return nil, nil, fmt.Errorf("%s is not a regular file, directory or symlink; remove it from the action's directory", p)
	}
	return data, h, nil
}

// checkActionDockerfile checks, when the action is loaded, that the
// Dockerfile of the Docker action a (in its directory dir) can be built
// here: it reads and parses it (see readActionDockerfile).
func (j *job) checkActionDockerfile(a *workflow.Action, file, dir string) error {
	_, _, err := j.readActionDockerfile(&actionBuild{file: file, dir: dir, image: a.Runs.Image})
	return err
}
