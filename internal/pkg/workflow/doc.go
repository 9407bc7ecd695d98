// Package workflow owns the single-job workflow model that a forge task
// carries in its workflow_payload, and the evaluator for the ${{ }}
// expressions written in it.
//
// # Parsing
//
// [Parse] reads the forge's payload: a GitHub Actions workflow with exactly
// one job. It checks every key against the GitHub Actions schema, so a typo
// fails with the YAML line and the field path rather than being ignored, in
// the wording of the strict-YAML layer that the config and load-config
// parsers share (package strictyaml): "workflow line 7: steps[0]: unknown
// key "shel"; did you mean "shell"? known keys: ...". It returns a
// [Workflow] whose [Job] and [Step] values hold plain strings. Values that
// may be expressions (if:, env values, with: values, timeout-minutes,
// continue-on-error) are kept unevaluated; the caller evaluates them when the
// step runs. A job's services: and container: become [Container] values
// (image, env, ports, volumes, options, credentials, cmd), also unevaluated.
// [ParseJobs] splits a local multi-job workflow into one [Workflow] per job,
// as the forge does (a caller that knows the file sets [ParseError.File], so
// that errors read "ci.yml:7: ..."), and [ExpandMatrix] expands a
// strategy.matrix into its jobs as Gitea does.
//
// A job may call a reusable workflow instead of having steps ([Job.Uses],
// checked by [ParseCallRef]); [ParseCalled] reads the called file: its
// on.workflow_call inputs, outputs and secrets, and its jobs, and
// [Called.CallInputs] builds the typed inputs context from the caller's
// with:.
//
// # Expressions
//
// A [Context] holds the values of the contexts (github, env, vars, secrets,
// steps, needs, job, runner, matrix, inputs, strategy, and jobs for a
// reusable workflow's outputs) and the job status.
// [Context.Eval] evaluates one expression, [Context.Interpolate] replaces
// every ${{ }} in a string, and [Context.EvalIf] applies the rules of if:.
// [Context.EvalBool], [Context.EvalMinutes] and [Context.InterpolateMap]
// evaluate continue-on-error:, timeout-minutes: and env:/with: maps.
// Expressions are parsed with github.com/rhysd/actionlint's parser and
// evaluated here with GitHub's semantics: loose equality with coercion to
// numbers, case-insensitive string comparison, && and || returning operand
// values, and the * object filter. [GithubContext] and [NeedsFromTask] build
// context values from a runner.v1.Task, [NeedsStatus] the status a job-level
// if: sees from the needed jobs' results, [InputsContext] the inputs context
// from the github one (typed by [Workflow.InputTypes], read from
// on.workflow_dispatch.inputs), and [RunnerContext] the runner context of
// this host.
//
// Operator precedence and associativity are those of actionlint's parser,
// which act, and so Gitea's own runner, also uses: all comparison operators
// share one level and chain to the right (1 < 2 == true is 1 < (2 == true)),
// and integer literals must fit in 32 bits. hashFiles() calls
// [Context.HashFiles], which the executor provides.
//
// Errors never quote context values (which may be secrets): they show the
// expression source, and positions instead of text.
package workflow
