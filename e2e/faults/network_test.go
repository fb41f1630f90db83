package faults_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// networkFault returns a fault that, in turn, drops every worker
// connection, stalls the workers' traffic for longer than their lease, and
// sets a random latency. The scheduler's own connection bypasses the
// proxy, so a stalled worker's jobs are rescued and completed elsewhere;
// the stalled worker's late writes must be refused.
func networkFault(p *proxy) func(r *run) string {
	var n int
	return func(r *run) string {
		n++
		switch n % 3 {
		case 0:
			return fmt.Sprintf("dropped %d connections", p.DropAll())
		case 1:
			d := 2*leaseTTL + time.Duration(rand.IntN(500))*time.Millisecond
			p.Stall(d)
			return fmt.Sprintf("stalled traffic for %v (%d jobs running)", d, r.running())
		default:
			d := time.Duration(rand.IntN(30)) * time.Millisecond
			p.SetLatency(d)
			return fmt.Sprintf("latency %v", d)
		}
	}
}

// TestNetworkFaults puts a proxy between the worker processes and the store.
// Two worker processes go through it, one dials the store directly, so
// work goes on while the proxied ones are cut off.
func TestNetworkFaults(t *testing.T) {
	for _, s := range sharedStores() {
		if !s.Networked {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel() // one store per backend; the runs share only the CPU
			answering(t, s.Name, s.URL)
			p := startProxy(t, hostOf(s.URL))
			sc := scenario{Name: "network/" + s.Name, Store: s, Jobs: 200, Workers: 3, WorkerURL: withHost(s.URL, p.Addr()),
				DirectWorkers: 1, WorkMs: 60, Fault: networkFault(p), Every: 500 * time.Millisecond, Faults: 3}
			if full() {
				sc.Jobs, sc.Faults, sc.Every, sc.Timeout = 5000, 300, time.Second, 15*time.Minute
			}
			runScenario(t, sc)
		})
	}
}
