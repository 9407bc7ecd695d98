// Package container runs the containers of forge jobs on a Docker Engine:
// the job's service containers (the system under test and its
// dependencies), its job container, the per-job network and the volumes
// they use. It wraps the Engine's official Go client
// (github.com/moby/moby/client) in one concrete type, [Engine], whose
// methods are the few operations a job needs: pull an image under a
// [PullPolicy], start a container from a [Spec], wait until it is healthy,
// read its logs, stream its resource use as [Sample] values, run a command
// in it, and remove it.
//
// # Ownership and cleanup
//
// Every object the Engine creates carries the label [LabelOwner] with the
// owner given to [New] (the runner's registration id) and [LabelJob] with
// the job's key, so [Engine.Reap] can remove what one job, or a whole
// daemon that was killed, left behind, without touching anything else on
// the host.
//
// # Concurrency
//
// An Engine is safe for concurrent use; each job uses its own objects.
// Callers that want to swap the Engine in tests define their own small
// interfaces over the methods they call.
package container
