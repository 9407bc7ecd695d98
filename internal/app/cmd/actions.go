package cmd

import (
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// actionCache is the cache of remote actions the runner config sets
// (runner.action_cache_dir, runner.action_cache_max_mb); an empty
// directory is jobrun's default, in the work directory.
func actionCache(r config.Runner) *jobrun.ActionCache {
	return &jobrun.ActionCache{Dir: r.ActionCacheDir, MaxBytes: int64(r.ActionCacheMaxMB) << 20}
}
