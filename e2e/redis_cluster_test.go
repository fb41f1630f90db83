package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	redisq "github.com/boson-go/boson/backend-redis"
	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// A Redis Cluster of three masters, started by this test binary from the
// redis-server on PATH the first time a test needs it and stopped at exit,
// for the flow scenarios (flowBackends). Its backend keeps every key of
// its prefix in one slot (redisq.Options.OneSlot), the layout in which the
// task limits of flow control are exact on a cluster. A worker process
// opens it by its locator: the nodes' addresses and the prefix.

var e2eCluster struct {
	once  sync.Once
	err   error
	addrs []string
	procs []*exec.Cmd
	dir   string
}

const clusterSlots = 16384

// redisClusterFactory is the cluster in the matrix's terms.
var redisClusterFactory = backendFactory{
	Name: "redis-cluster", New: func(t testing.TB, clock core.Clock) core.QueueBackend {
		return openRedisCluster(t, clock, clusterLocator(t), true)
	},
	Durable: true, Open: openRedisCluster, Locator: clusterLocator,
}

// flowBackends are the backends of the flow scenarios: the matrix and the
// Redis Cluster.
func flowBackends() []backendFactory {
	return append(append([]backendFactory(nil), backends...), redisClusterFactory)
}

func clusterLocator(t testing.TB) string {
	return strings.Join(clusterAddrs(t), ",") + "|" + uniqueName("c")
}

// clusterAddrs returns the nodes of the test cluster, starting it on first
// use.
func clusterAddrs(t testing.TB) []string {
	t.Helper()
	e2eCluster.once.Do(func() { e2eCluster.err = startE2ECluster() })
	if e2eCluster.err != nil {
		testreq.Unavailable(t, testreq.RedisCluster, e2eCluster.err.Error())
	}
	return e2eCluster.addrs
}

// openRedisCluster opens a OneSlot backend on the cluster and prefix that
// locator names; the owner deletes the prefix's keys at cleanup.
func openRedisCluster(t testing.TB, clock core.Clock, locator string, owner bool) core.QueueBackend {
	t.Helper()
	return openRedisClusterLayout(t, clock, locator, owner, true)
}

// redisClusterSlotsFactory is the cluster with each queue's keys in a
// slot of their own (redisq's default layout on a cluster).
var redisClusterSlotsFactory = backendFactory{
	Name: "redis-cluster-slots", New: func(t testing.TB, clock core.Clock) core.QueueBackend {
		return openRedisClusterLayout(t, clock, clusterLocator(t), true, false)
	},
}

// openRedisClusterLayout is openRedisCluster with the layout chosen:
// every key in one slot, or a slot per queue.
func openRedisClusterLayout(t testing.TB, clock core.Clock, locator string, owner, oneSlot bool) core.QueueBackend {
	t.Helper()
	nodes, prefix, ok := strings.Cut(locator, "|")
	if !ok {
		t.Fatalf("cluster locator %q is not nodes|prefix", locator)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(nodes, ",")})
	b, err := redisq.New(c, redisq.Options{Prefix: prefix, OneSlot: oneSlot, Clock: clock, Logger: quiet, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		if owner {
			ctx := context.Background()
			_ = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
				iter := n.Scan(ctx, 0, "{"+prefix+"*", 1000).Iterator()
				for iter.Next(ctx) {
					n.Del(ctx, iter.Val())
				}
				return nil
			})
		}
		_ = c.Close()
	})
	return b
}

func startE2ECluster() error {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return fmt.Errorf("redis-server is not on PATH: %w", err)
	}
	dir, err := os.MkdirTemp("", "boson-e2e-cluster-")
	if err != nil {
		return err
	}
	e2eCluster.dir = dir
	ctx := context.Background()
	var ports []int
	for i := range 3 {
		port, err := freeClusterPort(ports)
		if err != nil {
			return err
		}
		d := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", d,
			"--save", "", "--appendonly", "no", "--logfile", filepath.Join(d, "redis.log"),
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(d, "nodes.conf"),
			"--cluster-node-timeout", "30000", "--cluster-require-full-coverage", "no")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		e2eCluster.procs = append(e2eCluster.procs, cmd)
		ports = append(ports, port)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		e2eCluster.addrs = append(e2eCluster.addrs, addr)
		n := redis.NewClient(&redis.Options{Addr: addr})
		deadline := time.Now().Add(20 * time.Second)
		for n.Ping(ctx).Err() != nil {
			if time.Now().After(deadline) {
				n.Close()
				return fmt.Errorf("redis-server on %s did not answer", addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		err = n.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", i*clusterSlots/3, (i+1)*clusterSlots/3-1).Err()
		if err == nil && i > 0 {
			err = n.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", ports[0]).Err()
		}
		n.Close()
		if err != nil {
			return fmt.Errorf("configure %s: %w", addr, err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, addr := range e2eCluster.addrs {
		n := redis.NewClient(&redis.Options{Addr: addr})
		for {
			info, err := n.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") &&
				strings.Contains(info, "cluster_slots_ok:16384") {
				break
			}
			if time.Now().After(deadline) {
				n.Close()
				return fmt.Errorf("the cluster did not form: %v %s", err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		n.Close()
	}
	return nil
}

// freeClusterPort returns a port that is free, with its cluster bus port
// (+10000), and not in taken.
func freeClusterPort(taken []int) (int, error) {
	free := func(p int) bool {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
		return true
	}
	for range 100 {
		p := 20000 + rand.IntN(20000)
		ok := free(p) && free(p+10000)
		for _, q := range taken {
			ok = ok && p != q && p != q+10000 && p+10000 != q
		}
		if ok {
			return p, nil
		}
	}
	return 0, errors.New("no free port pair for a cluster node")
}

// stopE2ECluster stops the cluster's servers, if this process started them.
func stopE2ECluster() {
	for _, cmd := range e2eCluster.procs {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	if e2eCluster.dir != "" {
		_ = os.RemoveAll(e2eCluster.dir)
	}
}

// TestFlowMatrixRedisCluster runs the flow scenarios of the matrix on the
// Redis Cluster.
func TestFlowMatrixRedisCluster(t *testing.T) {
	for _, s := range flowScenarios {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(newEnv(t, redisClusterFactory))
		})
	}
}
