// Package actcache owns the cache server that `actions/cache` talks to:
// the GitHub Actions cache service v1 REST API (under
// /_apis/artifactcache/), as Gitea's runner embeds one. The daemon and
// `forgeload exec` start one [Server] when cache.enabled is set; each job
// is given a URL of its own ([Server.Grant]) that holds a random token,
// valid until the job ends and scoped to the job's repository: a job can
// find, write and download only the entries of its repository. The job
// reads the URL from ACTIONS_CACHE_URL.
//
// # Storage
//
// Entries are files named by a number under [Options.Dir]; an index file
// beside them keeps each entry's repository, key, version, size and its
// place in the least-recently-used order. No part of a key, version or
// repository name ever reaches a file path. The sum of the entries is kept
// within [Options.MaxBytes] (and their number within
// [Options.MaxEntries]) by removing those used least recently when an
// upload is committed; a repository past [Options.MaxRepoBytes] loses its
// own first, so that no repository can push all the others' out.
//
// # Hostile input
//
// Jobs run workflows from anyone who can push: every request is bounded
// (key and version lengths, the number of keys, JSON body sizes, an
// upload's size and each chunk's range, the uploads in flight and the bytes they hold together, at most
// MaxBytes), chunks may
// not overlap, and a commit is taken only when its chunks cover exactly
// the size it names.
package actcache
