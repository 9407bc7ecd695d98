package cmd

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/forgeload/forgeload/internal/pkg/actcache"
	"github.com/forgeload/forgeload/internal/pkg/config"
	"github.com/forgeload/forgeload/internal/pkg/jobrun"
)

// startCache starts the cache server for actions/cache when cache.enabled
// is set; it serves until ctx ends, and wg waits for it. It returns nil
// when the cache is off.
func startCache(ctx context.Context, c config.Cache, wg *sync.WaitGroup, log *logrus.Entry) (jobrun.CacheServer, error) {
	if !c.Enabled {
		return nil, nil
	}
	dir := c.Dir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "forgeload", "actions-cache")
	}
	srv, err := actcache.Listen(actcache.Options{Dir: dir, MaxBytes: int64(c.MaxMB) << 20, MaxRepoBytes: int64(c.MaxRepoMB) << 20, Host: c.Host, Port: c.Port})
	if err != nil {
		return nil, withCode(ExitBadInput, err)
	}
	log.Infof("serving the cache for actions/cache on http://%s/ (entries in %s)", srv.Addr(), dir)
	wg.Go(func() {
		if err := srv.Serve(ctx); err != nil {
			log.WithError(err).Error("the cache server for actions/cache stopped; jobs find no cache")
		}
	})
	return srv, nil
}
