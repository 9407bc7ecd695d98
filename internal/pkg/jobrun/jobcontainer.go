package jobrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// containerPath is PATH in a job container when GITHUB_PATH adds to it:
// the usual directories of a Linux image.
const containerPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// containerExit is a run: step that exited non-zero in the job container.
type containerExit struct{ code int }

func (e *containerExit) Error() string { return fmt.Sprintf("exit code %d", e.code) }

// runInContainer runs a run: step's argv in the job container, where the
// task directory is mounted at the same path, so the script, the workspace
// and every GITHUB_* file keep their names. Nothing else of the host is
// visible to it. On cancel the step's output stops at once; its processes
// end when the container is removed at the job's end.
func (j *job) runInContainer(ctx context.Context, argv, env []string, dir string, stdout, stderr io.Writer) error {
	code, err := j.deps.Containers.Exec(ctx, j.jobCtr, argv, env, dir, j.jobCtrUser, stdout, stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return &containerExit{code: code}
	}
	return nil
}

// probeJobContainer learns whether the job container has bash, the
// default shell of run: steps; without it they run with sh.
func (j *job) probeJobContainer(ctx context.Context) {
	code, err := j.deps.Containers.Exec(ctx, j.jobCtr, []string{"sh", "-c", "command -v bash"}, nil, "/", j.jobCtrUser, io.Discard, io.Discard)
	j.jobCtrBash = err == nil && code == 0
}

// releaseWorkspace gives the files a job container wrote in the task
// directory back to the daemon's user, so they can be removed; a
// container's root writes them as root. It is a no-op for a daemon that
// runs as root.
func (j *job) releaseWorkspace() {
	if j.jobCtr == "" || os.Getuid() == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	owner := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	_, _ = j.deps.Containers.Exec(ctx, j.jobCtr, []string{"chown", "-R", owner, j.dir}, nil, "/", "0", io.Discard, io.Discard)
}
