package cmd

import (
	"fmt"
	"io"

	runnerv1 "gitea.dev/actions-proto-go/runner/v1"

	"github.com/forgeload/forgeload/internal/pkg/workflow"
)

// stepNames names the steps of one job of `forgeload exec`, which prints
// a line as each step ends: a forge shows the names beside the log, a
// terminal has only the log.
type stepNames struct {
	names []string
	done  map[int]bool
}

// newStepNames reads the step names of a single-job payload; a payload
// that does not parse names none (the task runner reports why). A step
// without a name: is named by its uses:, or "run": never by its command,
// whose text the log shows already (and which may hold a literal value
// that the job masks).
func newStepNames(payload []byte) stepNames {
	s := stepNames{done: map[int]bool{}}
	if wf, err := workflow.Parse(payload); err == nil {
		for _, st := range wf.Job.Steps {
			name := st.Name
			switch {
			case name != "":
			case st.Uses != "":
				name = st.Uses
			default:
				name = "run"
			}
			s.names = append(s.names, name)
		}
	}
	return s
}

// print prints "■ step N name: result" for each step of states that ended
// since the last call.
func (s *stepNames) print(w io.Writer, prefix string, states []*runnerv1.StepState) {
	for i, st := range states {
		r := st.GetResult()
		if r == runnerv1.Result_RESULT_UNSPECIFIED || s.done[i] || i >= len(s.names) {
			continue
		}
		s.done[i] = true
		fmt.Fprintf(w, "%s■ step %d %s: %s\n", prefix, i+1, s.names[i], resultName(r))
	}
}
