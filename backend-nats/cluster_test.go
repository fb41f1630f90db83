package natsq_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// cluster is three JetStream servers in one process on loopback ports.
type cluster struct {
	servers []*server.Server
	urls    []string
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	ls := make([]net.Listener, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func startCluster(t testing.TB) *cluster {
	t.Helper()
	ports := freePorts(t, 6)
	var routes []string
	for i := 0; i < 3; i++ {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3+i]))
	}
	c := &cluster{}
	for i := 0; i < 3; i++ {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "boson", Host: "127.0.0.1", Port: ports[3+i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		c.servers = append(c.servers, s)
		c.urls = append(c.urls, s.ClientURL())
		t.Cleanup(s.Shutdown)
	}
	for _, s := range c.servers {
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatal("cluster node not ready")
		}
	}
	// Wait for the JetStream meta group to elect a leader: a replicated
	// stream can be created only then.
	nc := connect(t, strings.Join(c.urls, ","))
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "READY", Subjects: []string{"ready"}, Replicas: 3})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster JetStream not ready: %v", err)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	_ = js.DeleteStream(context.Background(), "READY")
	return c
}

// connectNode connects to node i and fails over to the other nodes.
func (c *cluster) connectNode(t testing.TB, i int) *nats.Conn {
	urls := append([]string{c.urls[i]}, append(append([]string{}, c.urls[:i]...), c.urls[i+1:]...)...)
	return connect(t, strings.Join(urls, ","), nats.DontRandomize())
}

// TestCluster runs the conformance suite on a three-node cluster with
// three replicas, then stops the stream leader in the middle of a run.
// Under the race detector it runs in a child built without it: the store's
// code is the embedded harness's, which runs under the race detector.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster tests start three servers")
	}
	t.Parallel()
	if testenv.WithoutRace(t) {
		return
	}
	c := startCluster(t)
	t.Run("Conformance", func(t *testing.T) {
		runConformance(t, harness("nats-cluster-r3", c.connectNode(t, 0), 3))
	})
	t.Run("NodeLoss", func(t *testing.T) { testNodeLoss(t, c) })
}

func testNodeLoss(t *testing.T, c *cluster) {
	const total, workers = 3000, 3
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := namespace("nodeloss")
	opts := natsq.Options{Namespace: ns, Replicas: 3, DecisionClock: clock, RequestTimeout: 2 * time.Second, PublishAttempts: 5, CompactEvery: 25, CompactKeep: 5}
	admin := newBackend(t, c.connectNode(t, 0), opts)
	for done := 0; done < total; done += 500 {
		reqs := make([]core.EnqueueRequest, 500)
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: "nl", Task: "t"}
		}
		if _, err := admin.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	js, _ := jetstream.New(c.connectNode(t, 0))
	info, err := js.Stream(ctx, natsq.StreamName(ns))
	if err != nil {
		t.Fatal(err)
	}
	leader := info.CachedInfo().Cluster.Leader
	var victim *server.Server
	for _, s := range c.servers {
		if s.Name() == leader {
			victim = s
		}
	}
	if victim == nil {
		t.Fatalf("no server named %q", leader)
	}

	var (
		mu        sync.Mutex
		completed = map[string]int{}
		errCount  int
		stopOnce  sync.Once
		wg        sync.WaitGroup
	)
	// Every worker's backend is open before any of them works, so that the
	// leader's shutdown cannot race the opening of a later worker.
	backends := make([]*natsq.Backend, workers)
	for w := range backends {
		b, err := natsq.New(ctx, c.connectNode(t, w), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		backends[w] = b
	}
	for w, b := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := 0
			for idle < 3 {
				jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "nl", WorkerID: fmt.Sprint("w", w), Limit: 50, LeaseTTL: time.Minute})
				if err != nil {
					mu.Lock()
					errCount++
					mu.Unlock()
					continue
				}
				if len(jobs) == 0 {
					if err := b.Sync(ctx); err == nil {
						idle++
					}
					continue
				}
				idle = 0
				items := make([]core.Completion, len(jobs))
				for i, j := range jobs {
					items[i] = core.Completion{Lease: j.Lease}
				}
				errs, err := b.Complete(ctx, items)
				mu.Lock()
				if err != nil {
					errCount++
				} else {
					for i, e := range errs {
						if e == nil {
							completed[jobs[i].ID]++
						}
					}
				}
				n := len(completed)
				mu.Unlock()
				if n >= total/3 {
					stopOnce.Do(func() {
						t.Logf("stopping stream leader %s after %d completions", leader, n)
						victim.Shutdown()
					})
				}
			}
		}()
	}
	wg.Wait()
	// Claims whose acknowledgement was lost left leases behind: they expire
	// on the clock and are rescued; then the remaining jobs are worked.
	// A claim whose publish timed out during the election may still be
	// stored after it, and so after a rescue pass: its lease runs from
	// then, so the clock moves on again until nothing is left running.
	clock.Advance(2 * time.Minute)
	for rounds, unknown := 0, 0; ; {
		// A call whose outcome is unknown (the stream still settling
		// after the election) is made again: rescue is idempotent, and
		// the leases of a claim that did land expire like the others.
		if _, err := admin.Rescue(ctx, core.RescueRequest{Limit: 1000}); err != nil {
			if unknown++; unknown > 5 {
				t.Fatalf("rescue: %v", err)
			}
			t.Logf("rescue: %v; again", err)
			continue
		}
		jobs, err := admin.Claim(ctx, core.ClaimRequest{Queue: "nl", WorkerID: "admin", Limit: 500, LeaseTTL: time.Minute})
		if err != nil {
			if unknown++; unknown > 5 {
				t.Fatal(err)
			}
			t.Logf("claim: %v; again", err)
			continue
		}
		if len(jobs) == 0 {
			if err := admin.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			counts, err := admin.CountJobs(ctx, core.JobFilter{Queue: "nl", States: []core.JobState{core.StateRunning}})
			if err != nil {
				t.Fatal(err)
			}
			if counts[core.StateRunning] == 0 || rounds == 5 {
				break
			}
			rounds++
			t.Logf("%d jobs still running after a rescue pass: moving the clock on", counts[core.StateRunning])
			clock.Advance(2 * time.Minute)
			continue
		}
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease}
		}
		errs, err := admin.Complete(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range errs {
			if e == nil {
				completed[jobs[i].ID]++
			}
		}
	}
	for id, n := range completed {
		if n != 1 {
			t.Fatalf("job %s completed %d times", id, n)
		}
	}
	if err := admin.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	counts, _ := admin.CountJobs(ctx, core.JobFilter{Queue: "nl"})
	if counts[core.StateSucceeded] != total || len(counts) != 1 {
		t.Fatalf("final counts %v (completed %d)", counts, len(completed))
	}
	// Every succeeded job was completed by a call that reported success, or
	// by one whose reply was lost; none twice.
	t.Logf("completions confirmed %d of %d; transient errors %d", len(completed), total, errCount)
}
