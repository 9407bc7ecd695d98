// Package container runs the containers of forge jobs on a Docker Engine:
// the job's service containers (the system under test and its
// dependencies), its job container, the per-job network and the volumes
// they use. It wraps the Engine's official Go client
// (github.com/moby/moby/client) in one concrete type, [Engine], whose
// methods are the few operations a job needs: pull an image under a
// [PullPolicy], start a container from a [Spec], wait until it is healthy,
// read its logs (or follow them while it runs), stream its resource use
// as [Sample] values, run a command in it, and remove it; and build an
// image from a context the caller gives ([Engine.Build], with the classic
// builder, no network unless asked, and no pull of a missing base).
//
// # Ownership and cleanup
//
// Every object the Engine creates carries the label [LabelOwner] with the
// owner given to [New] (the runner's registration id) and [LabelJob] with
// the job's key, so [Engine.Reap] can remove what one job, or a whole
// daemon that was killed, left behind, without touching anything else on
// the host.
//
// # What a job may ask for
//
// A job's options: string is hostile input. [Spec.ApplyOptions] reads it
// against an allow-list: the flags that only shape the container (health
// checks, resources, env, user, tmpfs, ...) pass; those that widen its
// reach beyond Docker's defaults pass only where the admin's [Policy]
// lists them (capabilities one by one, and the flags of [GatedOptions]);
// those that would share the host's namespaces, devices or files, or take
// the container off the job's network, are refused whatever the policy.
// Every refusal names the flag and the config key that would allow it, or
// says that none does. [Engine.Start] runs every container with
// no-new-privileges. Volumes are the caller's to check, against
// container.valid_volumes.
//
// # Concurrency
//
// An Engine is safe for concurrent use; each job uses its own objects.
// Callers that want to swap the Engine in tests define their own small
// interfaces over the methods they call.
package container
