package redisq

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/redis/go-redis/v9"
)

// testCluster is a 3-master Redis Cluster on loopback ports, started once
// per test binary and stopped by TestMain.
var testCluster struct {
	once    sync.Once
	err     error
	dir     string
	servers []*server
	client  *redis.ClusterClient
}

// clusterClient returns a client of the shared test cluster, starting the
// cluster on first use.
func clusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	requireServerBinary(t, testreq.RedisCluster)
	testCluster.once.Do(func() { testCluster.err = startCluster() })
	if testCluster.err != nil {
		t.Fatalf("redis cluster: %v", testCluster.err)
	}
	return testCluster.client
}

func startCluster() error {
	dir, err := os.MkdirTemp("", "boson-redis-cluster-")
	if err != nil {
		return err
	}
	testCluster.dir = dir
	for i := range 3 {
		d := fmt.Sprintf("%s/n%d", dir, i)
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		s, err := startServer(d, "--cluster-enabled", "yes", "--cluster-config-file", d+"/nodes.conf",
			"--cluster-node-timeout", "30000", "--cluster-require-full-coverage", "no")
		if err != nil {
			return err
		}
		testCluster.servers = append(testCluster.servers, s)
	}
	ctx := context.Background()
	const slots = 16384
	for i, s := range testCluster.servers {
		c := redis.NewClient(&redis.Options{Addr: s.addr()})
		lo, hi := i*slots/3, (i+1)*slots/3-1
		err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		if err == nil && i > 0 {
			first := testCluster.servers[0]
			err = c.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", first.port).Err()
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("configure node %s: %w", s.addr(), err)
		}
	}
	// Wait for every node to see the whole cluster.
	deadline := time.Now().Add(60 * time.Second)
	for _, s := range testCluster.servers {
		c := redis.NewClient(&redis.Options{Addr: s.addr()})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return fmt.Errorf("cluster did not form: %v %s", err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
	}
	var addrs []string
	for _, s := range testCluster.servers {
		addrs = append(addrs, s.addr())
	}
	testCluster.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	for {
		err := testCluster.client.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
		var n atomic.Int32
		_ = testCluster.client.ForEachMaster(ctx, func(context.Context, *redis.Client) error { n.Add(1); return nil })
		if err == nil && n.Load() == 3 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster client sees %d masters: %v", n.Load(), err)
		}
		testCluster.client.ReloadState(ctx)
		time.Sleep(50 * time.Millisecond)
	}
}

func stopCluster() {
	if testCluster.client != nil {
		testCluster.client.Close()
	}
	for _, s := range testCluster.servers {
		s.stop()
	}
	if testCluster.dir != "" {
		os.RemoveAll(testCluster.dir)
	}
}

func TestConformanceCluster(t *testing.T) {
	conformance.Run(t, harness("redis-cluster", 0, func(t testing.TB) redis.UniversalClient { return clusterClient(t) }))
}
