package jobrun

import (
	"context"
	"time"

	"github.com/forgeload/forgeload/internal/pkg/hashfiles"
)

// HashFilesTimeout bounds one hashFiles() call, as GitHub's runner bounds
// it.
const HashFilesTimeout = 2 * time.Minute

// hashFilesFunc is hashFiles() over the job's workspace, opened through
// the task directory (an earlier step may have replaced it with a
// symlink); nil before the task directory exists.
func (j *job) hashFilesFunc() func([]string) (string, error) {
	if j.td == nil {
		return nil
	}
	return func(args []string) (string, error) {
		pats, err := hashfiles.Compile(j.ws, args)
		if err != nil {
			return "", err
		}
		root, err := j.td.OpenRoot(j.ws)
		if err != nil {
			return "", err
		}
		defer root.Close()
		ctx, cancel := context.WithTimeout(context.Background(), HashFilesTimeout)
		defer cancel()
		return hashfiles.Hash(ctx, root, pats)
	}
}
