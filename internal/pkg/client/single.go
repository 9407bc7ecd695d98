package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"connectrpc.com/connect"
	runnerv1 "gitea.dev/actions-proto-go/runner/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// FetchSingleTask is Forgejo's RPC (Forgejo 15 and later) that hands a runner
// one task, optionally the one waiting job whose per-attempt handle it names:
// runner.v1.RunnerService/FetchSingleTask, defined in Forgejo's own protocol
// module (code.forgejo.org/forgejo/actions-proto), which Gitea's module, the
// one forgeload is built on, lacks. Forgejo Runner calls it for
// `forgejo-runner one-job --handle`.
//
// Its messages are known here by their field names only (tasks_version and
// an optional handle in the request; task and tasks_version in the
// response), not by their protobuf field numbers, so the call uses the
// Connect protocol's JSON encoding, which every connect-go server (Forgejo's
// included) accepts next to the binary one: JSON carries the names, never
// the numbers. See docs/forgejo.md for where this was read.
const FetchSingleTaskProcedure = "/runner.v1.RunnerService/FetchSingleTask"

// HeaderRequestKey carries the idempotency key of a FetchTask or
// FetchSingleTask call, as Forgejo Runner sends it: a random UUID kept for
// every retry of a call that failed (the forge may have assigned a task
// whose answer was lost) and replaced after a call that succeeded. Forgejo
// (2026) records the key on the tasks it assigns and, when a runner sends
// a key again, answers the tasks it assigned to that runner under that key
// instead of picking new ones. Gitea ignores the header.
const HeaderRequestKey = "x-runner-request-key"

// FetchSingleTaskRequest is Forgejo's runner.v1.FetchSingleTaskRequest.
type FetchSingleTaskRequest struct {
	// TasksVersion is the version the runner last saw; 0 always scans.
	TasksVersion int64
	// Handle names the one job to take: the per-attempt handle Forgejo
	// lists for waiting jobs (GET /api/v1/repos/{owner}/{repo}/actions/runners/jobs,
	// field "handle"). Empty takes any job the runner's labels match, as
	// FetchTask does.
	Handle string
}

// FetchSingleTaskResponse is Forgejo's runner.v1.FetchSingleTaskResponse.
// Task is nil when the forge has no task for the runner: with a handle,
// no waiting job has that handle and labels the runner matches.
type FetchSingleTaskResponse struct {
	Task         *runnerv1.Task
	TasksVersion int64
}

// singleCodec is the Connect "json" codec of FetchSingleTask on the client
// side: it writes the request and reads the response by field name, as
// protojson does.
type singleCodec struct{}

func (singleCodec) Name() string { return "json" }

func (singleCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*FetchSingleTaskRequest)
	if !ok {
		return nil, fmt.Errorf("FetchSingleTask codec: cannot encode %T", v)
	}
	out := map[string]string{}
	if m.TasksVersion != 0 {
		out["tasksVersion"] = strconv.FormatInt(m.TasksVersion, 10) // protojson writes int64 as a string
	}
	if m.Handle != "" {
		out["handle"] = m.Handle
	}
	return json.Marshal(out)
}

func (singleCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*FetchSingleTaskResponse)
	if !ok {
		return fmt.Errorf("FetchSingleTask codec: cannot decode into %T", v)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("decode FetchSingleTask response: %w", err)
	}
	// protojson reads a field by its JSON name or its proto name; unknown
	// fields are skipped, as connect-go's own JSON codec does.
	version, ok := fields["tasksVersion"]
	if !ok {
		version = fields["tasks_version"]
	}
	var err error
	if m.TasksVersion, err = jsonInt64(version); err != nil {
		return fmt.Errorf("decode FetchSingleTask tasks_version: %w", err)
	}
	m.Task = nil
	if b := fields["task"]; len(b) > 0 && !bytes.Equal(b, []byte("null")) {
		m.Task = &runnerv1.Task{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, m.Task); err != nil {
			return fmt.Errorf("decode FetchSingleTask task: %w", err)
		}
	}
	return nil
}

// jsonInt64 reads a protojson int64: a number or a decimal string; absent
// or null is 0.
func jsonInt64(b json.RawMessage) (int64, error) {
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		s = string(b)
	}
	return strconv.ParseInt(s, 10, 64)
}

func newRequestKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand docs)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// fetchKeyLocked returns the key for the next fetch call. c.keyMu must be
// held.
func (c *Client) fetchKeyLocked() string {
	if c.key == "" {
		c.key = newRequestKey()
	}
	return c.key
}

// withRequestKey runs one fetch call with the current request key and
// replaces the key when the call succeeded (the forge answered, with or
// without a task). Fetch calls of one Client are serialised, so that the
// call after a failure carries the failed call's key.
func withRequestKey[Res any](c *Client, h interface{ Set(string, string) }, call func() (*connect.Response[Res], error)) (*connect.Response[Res], error) {
	c.keyMu.Lock()
	defer c.keyMu.Unlock()
	h.Set(HeaderRequestKey, c.fetchKeyLocked())
	res, err := call()
	if err == nil {
		c.key = ""
	}
	return res, err
}

// FetchSingleTask calls Forgejo's RunnerService/FetchSingleTask (see
// [FetchSingleTaskProcedure]) with the request key header. A forge without
// it (Gitea, Forgejo before 15) answers connect.CodeUnimplemented.
func (c *Client) FetchSingleTask(ctx context.Context, req *connect.Request[FetchSingleTaskRequest]) (*connect.Response[FetchSingleTaskResponse], error) {
	return withRequestKey(c, req.Header(), func() (*connect.Response[FetchSingleTaskResponse], error) {
		return c.single.CallUnary(ctx, req)
	})
}
