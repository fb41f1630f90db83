package faults_test

import (
	"testing"
	"time"
)

// TestStoreRestarts crashes the store server the test owns in the middle
// of a run and starts it again on the same data: Redis with
// appendfsync always, a Postgres cluster (immediate shutdown, then WAL
// replay), a NATS server with JetStream on the same store directory, and
// one node of a three-node NATS cluster at a time. Nothing spawned may be
// lost and the invariants must hold.
func TestStoreRestarts(t *testing.T) {
	servers := []struct {
		name  string
		start func(testing.TB) *server
		store func(url string) store
	}{
		{"redis", redisServer, redisStore},
		{"postgres", postgresServer, postgresStore},
		{"nats", natsServer, natsStore},
	}
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			t.Parallel()
			srv := sv.start(t)
			sc := scenario{Name: "restart/" + sv.name, Store: sv.store(srv.url), Jobs: 200, Workers: 2, WorkMs: 30,
				Fault: restartFault(srv), Every: time.Second, Faults: 1}
			if full() {
				sc.Jobs, sc.Faults, sc.Every, sc.Timeout = 5000, 10, 3*time.Second, 15*time.Minute
			}
			runScenario(t, sc)
		})
	}
	// One node of a three-node NATS cluster (the command stream has three
	// replicas) crashes at a time and starts again on its store directory
	// while the workers go on.
	t.Run("nats-cluster-node", func(t *testing.T) {
		t.Parallel()
		url, nodes := natsCluster(t)
		sc := scenario{Name: "restart/nats-cluster-node", Store: natsClusterStore(url), Jobs: 200, Workers: 2, WorkMs: 30,
			Fault: nodeRestartFault(nodes), Every: time.Second, Faults: 1}
		if full() {
			sc.Jobs, sc.Faults, sc.Every, sc.Timeout = 5000, 6, 3*time.Second, 15*time.Minute
		}
		runScenario(t, sc)
	})
}
