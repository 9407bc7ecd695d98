package forgetest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"connectrpc.com/connect"
)

// Flavor is the forge a [Forge] imitates.
type Flavor int

const (
	// Gitea is Gitea 1.27, the default.
	Gitea Flavor = iota
	// Forgejo is Forgejo as read from its source (routers/api/actions/runner,
	// models/actions/forgejo.go, cmd/forgejo/actions.go, the task context of
	// services/actions and the /api/v1 actions routes; see docs/forgejo.md
	// for what was read and what was not). Where a Forge in this flavor
	// differs from one in the Gitea flavor:
	//
	//   - Register: a missing token or name is InvalidArgument; the request's
	//     capabilities and ephemeral flag are ignored.
	//   - An unknown runner gets a proper connect Unauthenticated error,
	//     "unregistered runner" (Gitea answers HTTP 500, code unknown).
	//   - Declare returns no X-Gitea-Actions-Capabilities header and stores
	//     no capabilities, so there is no "cancelling" state: [Forge.Cancel]
	//     cancels a running task at once.
	//   - UpdateLog with no rows acknowledges and does nothing: no_more is
	//     honoured only together with at least one new row.
	//   - Task context adds forgejo_default_actions_url,
	//     forgejo_runtime_token (the same token as gitea_runtime_token),
	//     forgejo_server_version and repository_id, and ref_protected is a
	//     bool; secrets add FORGEJO_TOKEN.
	//   - Offline registration: [Forge.RegisterSecret], as
	//     `forgejo forgejo-cli actions register --secret`.
	//   - /api/v1: runs are listed without a branch filter (the branch is in
	//     "prettyref", the result in "status"), a run's artifacts are a bare
	//     JSON array, and an artifact's zip is served directly, not through
	//     a redirect. [WithoutArtifactAPI] imitates a Forgejo that has no
	//     artifact endpoints yet.
	//   - Forgejo 15's one-job flow: FetchSingleTask with a job handle, the
	//     runner jobs list with handles, and the x-runner-request-key
	//     recovery of FetchTask and FetchSingleTask (see single.go).
	Forgejo
)

// String returns "gitea" or "forgejo".
func (fl Flavor) String() string {
	if fl == Forgejo {
		return "forgejo"
	}
	return "gitea"
}

// ForgejoServerVersion is the forgejo_server_version a Forgejo-flavored
// Forge puts in task contexts.
const ForgejoServerVersion = "15.0.0+fake"

// WithForgejo makes the Forge imitate Forgejo rather than Gitea; see
// [Forgejo].
func WithForgejo() Option {
	return func(f *Forge) {
		f.flavor = Forgejo
		f.capabilities = ""
	}
}

// WithFlavor makes the Forge imitate fl, for tests that run in both
// flavors.
func WithFlavor(fl Flavor) Option {
	return func(f *Forge) {
		if fl == Forgejo {
			WithForgejo()(f)
		}
	}
}

// WithoutArtifactAPI makes the Forge answer 404 on the REST artifact
// endpoints (/api/v1/repos/{owner}/{repo}/actions/runs/{run}/artifacts and
// /actions/artifacts/{id}/zip), as a Forgejo older than its artifact API
// does. Runs are still listed.
func WithoutArtifactAPI() Option {
	return func(f *Forge) { f.noArtifactAPI = true }
}

// Flavor returns the forge the Forge imitates.
func (f *Forge) Flavor() Flavor { return f.flavor }

// errForgejoUnregistered is Forgejo's answer to an unknown runner or a bad
// token: its interceptor returns a connect error.
func errForgejoUnregistered() error {
	return connect.NewError(connect.CodeUnauthenticated, errors.New("unregistered runner"))
}

// RegisterSecret registers a runner offline, as Forgejo's
// `forgejo forgejo-cli actions register --secret SECRET --name NAME
// --labels L` does: the secret must be 40 hexadecimal characters; the
// runner's uuid is the first 16 characters of the secret taken as the 16
// bytes of a UUID (their ASCII codes, not hex-decoded), and its token is the
// whole secret. It is idempotent: registering the same secret again updates
// the name and labels of the runner it made, and a different secret with
// the same first 16 characters replaces that runner's token. It returns the
// uuid, as forgejo-cli prints it. It works in either flavor.
func (f *Forge) RegisterSecret(secret, name string, labels []string) (string, error) {
	if len(secret) != 40 {
		return "", fmt.Errorf("the secret must be exactly 40 characters long, not %d", len(secret))
	}
	if _, err := hex.DecodeString(secret); err != nil {
		return "", fmt.Errorf("the secret must be an hexadecimal string: %w", err)
	}
	h := hex.EncodeToString([]byte(secret[:16]))
	uuid := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runners {
		if r.uuid == uuid && !r.deleted {
			r.name, r.labels = name, slices.Clone(labels)
			r.tokenHash = hashToken(r.salt, secret)
			return uuid, nil
		}
	}
	r, _ := f.addRunnerLocked(name, "", labels, nil, false)
	r.uuid = uuid
	r.tokenHash = hashToken(r.salt, secret)
	return uuid, nil
}
