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
	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/redis/go-redis/v9"
)

// cluster is a Redis Cluster of three masters on loopback ports, node i
// serving slots [i*16384/3, (i+1)*16384/3).
type cluster struct {
	dir     string
	servers []*server
}

// testCluster is the cluster most tests share, started once per test
// binary and stopped by TestMain.
var testCluster struct {
	once   sync.Once
	err    error
	c      *cluster
	client *redis.ClusterClient
}

// clusterClient returns a client of the shared test cluster, starting the
// cluster on first use.
func clusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	requireServerBinary(t, testreq.RedisCluster)
	testCluster.once.Do(func() {
		testCluster.c, testCluster.err = startCluster()
		if testCluster.err == nil {
			testCluster.client, testCluster.err = testCluster.c.newClient()
		}
	})
	if testCluster.err != nil {
		t.Fatalf("redis cluster: %v", testCluster.err)
	}
	return testCluster.client
}

// startCluster starts a cluster in a new temporary directory; extra are
// more redis-server arguments for every node.
func startCluster(extra ...string) (*cluster, error) {
	dir, err := os.MkdirTemp("", "boson-redis-cluster-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	for i := range 3 {
		d := fmt.Sprintf("%s/n%d", dir, i)
		if err := os.Mkdir(d, 0o755); err != nil {
			c.stop()
			return nil, err
		}
		args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", d + "/nodes.conf",
			"--cluster-node-timeout", "30000", "--cluster-require-full-coverage", "no"}, extra...)
		s, err := startServer(d, args...)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.servers = append(c.servers, s)
	}
	ctx := context.Background()
	for i, s := range c.servers {
		n := redis.NewClient(&redis.Options{Addr: s.addr()})
		lo, hi := i*clusterSlots/3, (i+1)*clusterSlots/3-1
		err := n.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err()
		if err == nil && i > 0 {
			err = n.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", c.servers[0].port).Err()
		}
		n.Close()
		if err != nil {
			c.stop()
			return nil, fmt.Errorf("configure node %s: %w", s.addr(), err)
		}
	}
	if err := c.waitFormed(60 * time.Second); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

const clusterSlots = 16384

// node returns the index of the node that serves slot.
func (c *cluster) node(slot int64) int { return int(slot * 3 / clusterSlots) }

// waitFormed waits until every node sees the whole cluster in state ok,
// every slot served.
func (c *cluster) waitFormed(within time.Duration) error {
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for _, s := range c.servers {
		n := redis.NewClient(&redis.Options{Addr: s.addr()})
		for {
			info, err := n.ClusterInfo(ctx).Result()
			// With cluster-require-full-coverage off a node reports ok
			// before it knows every slot's owner: wait for all of them.
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") &&
				strings.Contains(info, "cluster_slots_ok:16384") {
				break
			}
			if time.Now().After(deadline) {
				n.Close()
				return fmt.Errorf("cluster did not form: %v %s", err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		n.Close()
	}
	return nil
}

// newClient returns a cluster client that sees all three masters, with
// the options that set makes.
func (c *cluster) newClient(set ...func(*redis.ClusterOptions)) (*redis.ClusterClient, error) {
	opts := &redis.ClusterOptions{}
	for _, s := range c.servers {
		opts.Addrs = append(opts.Addrs, s.addr())
	}
	for _, f := range set {
		f(opts)
	}
	client := redis.NewClusterClient(opts)
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := client.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
		var n atomic.Int32
		_ = client.ForEachMaster(ctx, func(context.Context, *redis.Client) error { n.Add(1); return nil })
		if err == nil && n.Load() == 3 {
			return client, nil
		}
		if time.Now().After(deadline) {
			client.Close()
			return nil, fmt.Errorf("cluster client sees %d masters: %v", n.Load(), err)
		}
		client.ReloadState(ctx)
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) stop() {
	for _, s := range c.servers {
		s.stop()
	}
	os.RemoveAll(c.dir)
}

func stopCluster() {
	if testCluster.client != nil {
		testCluster.client.Close()
	}
	if testCluster.c != nil {
		testCluster.c.stop()
	}
}

// TestConformanceCluster runs the suite on the cluster with every key of a
// prefix in one slot. The cluster harnesses run, under the race detector,
// in a child built without it: the store's code is the standalone
// harness's, which runs under the race detector, but for its key names.
func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	if testenv.WithoutRace(t) {
		return
	}
	conformance.Run(t, harness("redis-cluster", Options{OneSlot: true}, func(t testing.TB) redis.UniversalClient { return clusterClient(t) }))
}

// TestConformanceClusterSlots runs the suite on the cluster with a slot
// per queue (the default layout): everything but flow control, whose task
// limits span queues.
func TestConformanceClusterSlots(t *testing.T) {
	t.Parallel()
	if testenv.WithoutRace(t) {
		return
	}
	conformance.Run(t, harness("redis-cluster-slots", Options{}, func(t testing.TB) redis.UniversalClient { return clusterClient(t) }))
}
