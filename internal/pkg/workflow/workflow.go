package workflow

import (
	"strings"
)

// Workflow is the parsed payload of one forge task: the top-level keys the
// forge keeps and the one job it carries. Values are not evaluated. The zero
// value is an empty workflow; a Workflow is safe for concurrent reads.
type Workflow struct {
	// Name is the top-level name:, or "" when absent.
	Name string
	// RunName is the top-level run-name:, or "".
	RunName string
	// Env is the top-level env:, with values rendered as strings. It may be nil.
	Env map[string]string
	// Defaults is the top-level defaults.run.
	Defaults Defaults
	// InputTypes maps each input declared under
	// on.workflow_dispatch.inputs to its type: ("boolean", "number",
	// "string", "choice", "environment"), lower-cased; nil when on: declares
	// none. See [InputsContext].
	InputTypes map[string]string
	// JobID is the key of the job under jobs:.
	JobID string
	// Job is the workflow's only job; Parse never returns a nil Job.
	Job *Job
}

// Defaults holds defaults.run, at workflow or job level. Empty fields are
// unset.
type Defaults struct {
	// Shell is defaults.run.shell.
	Shell string
	// WorkingDirectory is defaults.run.working-directory.
	WorkingDirectory string
}

// Job is the one job of a forge task. Expression-valued fields hold the
// source text, unevaluated.
type Job struct {
	// Name is the job's name:, or "" when absent.
	Name string
	// RunsOn holds the labels of runs-on:, written as a string, a list, or
	// a {group, labels} mapping.
	RunsOn []string
	// Needs lists the jobs named in needs:. The forge erases needs: from
	// its payload, so for a task this is empty; see [ParseJobs].
	Needs []string
	// Env is the job's env:, with values rendered as strings.
	Env map[string]string
	// If is the job's if: condition, or "" when absent.
	If string
	// Steps are the job's steps, in order; Steps[i].Index == i.
	Steps []Step
	// Outputs maps each job output name to its (usually ${{ }}) value.
	Outputs map[string]string
	// TimeoutMinutes is timeout-minutes:, a number or an expression, or "".
	TimeoutMinutes string
	// ContinueOnError is continue-on-error:, "true", "false", an
	// expression, or "".
	ContinueOnError string
	// Defaults is the job's defaults.run.
	Defaults Defaults
	// Matrix holds the values of strategy.matrix. The forge expands
	// matrices before it sends a job, writing each value as a one-element
	// list; such lists are unwrapped here, so Matrix["os"] is "linux" rather
	// than ["linux"]. include and exclude are dropped. Matrix is nil when the
	// job has no matrix or the matrix is an expression.
	Matrix map[string]any
	// Services are the job's services:, by id; nil when none.
	Services map[string]*Container
	// Container is the job's container:, or nil when its steps run on the
	// host.
	Container *Container
	// Uses is the reusable workflow the job calls (see [ParseCallRef]),
	// or "" for a job of steps. A job that calls one has no Steps.
	Uses string
	// With holds the inputs of a job that calls a reusable workflow,
	// rendered as for [Step.With], unevaluated.
	With map[string]string
	// Secrets maps the secrets the called workflow gets to their values
	// (usually ${{ secrets.X }}), unevaluated; see SecretsInherit.
	Secrets map[string]string
	// SecretsInherit is secrets: inherit: the called workflow gets every
	// secret of the caller.
	SecretsInherit bool
}

// Step is one entry of a job's steps:. Expression-valued fields hold the
// source text, unevaluated. Exactly one of Run and Uses is set.
type Step struct {
	// Index is the step's position in steps:, from 0. The forge reports
	// step states by this index.
	Index int
	// ID is the step's id:, or "".
	ID string
	// Name is the step's name:, or "". See [Step.DisplayName].
	Name string
	// If is the step's if: condition, or "".
	If string
	// Uses is the action reference of a uses: step.
	Uses string
	// Run is the script of a run: step.
	Run string
	// Shell is the step's shell:, or "" for the job or workflow default.
	Shell string
	// WorkingDirectory is the step's working-directory:, or "".
	WorkingDirectory string
	// Env is the step's env:, with values rendered as strings.
	Env map[string]string
	// With holds the inputs of a uses: step. Scalars are rendered as
	// strings the way GitHub renders them: numbers without a trailing .0,
	// booleans as true/false, null as "".
	With map[string]string
	// ContinueOnError is continue-on-error:, "true", "false", an
	// expression, or "".
	ContinueOnError string
	// TimeoutMinutes is timeout-minutes:, a number or an expression, or "".
	TimeoutMinutes string
}

// DisplayName returns the name the forge shows for the step: its name:, or
// "Run " and the first non-empty line of its script, or "Run " and its
// uses: reference.
func (s Step) DisplayName() string {
	if s.Name != "" {
		return s.Name
	}
	if s.Run != "" {
		for _, line := range strings.Split(s.Run, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				return "Run " + line
			}
		}
		return "Run"
	}
	return "Run " + s.Uses
}

// UsesRef splits a uses: reference into the action and the ref after the
// last "@": "actions/checkout@v4" gives ("actions/checkout", "v4"). A
// reference without "@" (a local "./path" or a "docker://" image) is
// returned whole with an empty ref.
func UsesRef(uses string) (action, ref string) {
	if strings.HasPrefix(uses, "docker://") {
		return uses, ""
	}
	i := strings.LastIndexByte(uses, '@')
	if i < 0 {
		return uses, ""
	}
	return uses[:i], uses[i+1:]
}

// StepShell returns the shell for step s: its own shell:, else the job's
// defaults.run.shell, else the workflow's, else "" (the caller's default,
// bash for forgeload).
func (w *Workflow) StepShell(s Step) string {
	return firstNonEmpty(s.Shell, w.jobDefaults().Shell, w.Defaults.Shell)
}

// StepWorkingDirectory returns the working directory for step s: its own
// working-directory:, else the job's default, else the workflow's, else ""
// (the workspace).
func (w *Workflow) StepWorkingDirectory(s Step) string {
	return firstNonEmpty(s.WorkingDirectory, w.jobDefaults().WorkingDirectory, w.Defaults.WorkingDirectory)
}

func (w *Workflow) jobDefaults() Defaults {
	if w.Job == nil {
		return Defaults{}
	}
	return w.Job.Defaults
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
