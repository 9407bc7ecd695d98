// Package loadrun is the one load executor. The forgeload/load step, the
// `forgeload load` command and the cluster's segment runner all run a load
// test through it: [Load] assembles a config from a file and inline keys
// and validates it; [New] checks every target against the runner's target
// policy before a byte is sent, installs the same check at dial time and
// on every redirect (a refusal stops the run) and builds the engine's run under the runner's
// limits; [Test.Run] runs it and returns the measurements, which the caller
// judges once with package outcome.
//
// For a test split over several hosts it holds both sides: [Coordinate]
// ships a validated, typed spec through the cluster (with the job's and
// step's names, masked, for every host's load metrics), turns the merged
// per-second snapshots into progress lines and the merged result, and says
// when the run delivered less than planned; [SegmentRunner] runs one host's
// share under that host's own policy and limits. [EncodeSpec] and
// [DecodeSpec] are the versioned wire form of the spec; a member of another
// version is refused with a message saying so. What each caller shows (step
// log, job summary, terminal) stays with the caller.
package loadrun
