package dashboard

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// redisFacts is what the overview tells of the Redis deployment.
type redisFacts struct {
	Mode      string
	Version   string
	UsedBytes int64 // used_memory, summed over a Cluster's primaries
	Keys      int64 // keys of every database, summed over a Cluster's primaries
	Shards    int   // primaries of a Cluster; 1 otherwise
	Err       string
}

// readRedisFacts asks rdb for its version, memory and keys; nil when there is no rdb.
func readRedisFacts(ctx context.Context, rdb redis.UniversalClient, mode string) *redisFacts {
	if rdb == nil {
		return nil
	}
	f := &redisFacts{Mode: mode}
	var mu sync.Mutex
	add := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server", "memory", "keyspace").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		f.addInfo(info)
		return nil
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, add)
	} else if c, ok := rdb.(*redis.Client); ok {
		err = add(ctx, c)
	}
	if err != nil {
		f.Err = err.Error()
	}
	return f
}

// addInfo adds the facts of one server's INFO text to f.
func (f *redisFacts) addInfo(info string) {
	f.Shards++
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case k == "redis_version":
			f.Version = v
		case k == "used_memory":
			n, _ := strconv.ParseInt(v, 10, 64)
			f.UsedBytes += n
		case strings.HasPrefix(k, "db"):
			// db0:keys=12,expires=0,avg_ttl=0
			keys, _, _ := strings.Cut(strings.TrimPrefix(v, "keys="), ",")
			n, _ := strconv.ParseInt(keys, 10, 64)
			f.Keys += n
		}
	}
}
