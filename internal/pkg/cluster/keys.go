package cluster

import "strconv"

// Pool-level keys (DISTRIBUTED.md 5.2). They outlive any run.
const runnersKey = "lt:runners"

func presenceKey(rid string) string { return "lt:runner:" + rid }
func inboxKey(rid string) string    { return "lt:runner:" + rid + ":inbox" }
func claimKey(rid string) string    { return "lt:runner:" + rid + ":claim" }

// runKeys names the keys of one run. The braces are a Redis Cluster hash
// tag so every key of a run lives in one slot.
type runKeys string

func (r runKeys) k(s string) string         { return "lt:{" + string(r) + "}:" + s }
func (r runKeys) meta() string              { return r.k("meta") }
func (r runKeys) state() string             { return r.k("state") }
func (r runKeys) coord() string             { return r.k("coord") }
func (r runKeys) gen() string               { return r.k("gen") }
func (r runKeys) workers() string           { return r.k("workers") }
func (r runKeys) alive(w string) string     { return r.k("w:" + w + ":alive") }
func (r runKeys) status(w string) string    { return r.k("w:" + w + ":status") }
func (r runKeys) renewals(w string) string  { return r.k("w:" + w + ":renewals") }
func (r runKeys) desired(w string) string   { return r.k("w:" + w + ":desired") }
func (r runKeys) cmd(w string) string       { return r.k("w:" + w + ":cmd") }
func (r runKeys) bcast() string             { return r.k("bcast") }
func (r runKeys) seg() string               { return r.k("seg") }
func (r runKeys) segOwner() string          { return r.k("seg:owner") }
func (r runKeys) ready() string             { return r.k("ready") }
func (r runKeys) startAt() string           { return r.k("start_at") }
func (r runKeys) events() string            { return r.k("events") }
func (r runKeys) metrics() string           { return r.k("metrics") }
func (r runKeys) timeline() string          { return r.k("timeline") }
func (r runKeys) summary() string           { return r.k("summary") }
func (r runKeys) feedNext() string          { return r.k("feed:next") }
func (r runKeys) feedBack() string          { return r.k("feed:back") }
func (r runKeys) pattern() string           { return "lt:{" + string(r) + "}:*" }
func ownerValue(w string, gen int64) string { return w + ":" + strconv.FormatInt(gen, 10) }

// Run states (DISTRIBUTED.md 5.2), changed only by the CAS script.
const (
	StatePreparing = "PREPARING"
	StateReady     = "READY"
	StateRunning   = "RUNNING"
	StateStopping  = "STOPPING"
	StateDone      = "DONE"
	StateAborted   = "ABORTED"
)

// Stream caps (MAXLEN ~).
const (
	streamCap        = 1000
	eventsCap        = 10000
	metricsCapPerW   = 7200
	doneTTLSeconds   = 3600
	defaultRunTTLPad = 6 * 3600
)
