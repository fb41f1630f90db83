package faults_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// networkFault returns a fault that, in turn, stalls the proxied workers'
// traffic for longer than their lease, sets a random latency, and drops
// every proxied connection. The scheduler's own connection bypasses the
// proxy, so a stalled worker's jobs are rescued and completed elsewhere;
// the stalled worker's late writes must be refused. A stall fires only
// while a proxied worker holds running jobs, a drop only when there were
// connections to drop; until then the same fault is tried again.
func networkFault(p *proxy) func(r *run) string {
	var n int
	return func(r *run) string {
		var what string
		switch n % 3 {
		case 0:
			var proxied []int
			for slot := r.sc.DirectWorkers; slot < r.sc.Workers; slot++ {
				proxied = append(proxied, slot)
			}
			w, held := r.busyWorker(proxied...)
			if w == nil {
				return ""
			}
			d := 2*leaseTTL + time.Duration(rand.IntN(500))*time.Millisecond
			p.Stall(d)
			what = fmt.Sprintf("stalled proxied traffic for %v (worker %s holds %d running jobs)", d, w.id, held)
		case 1:
			d := time.Duration(rand.IntN(30)) * time.Millisecond
			p.SetLatency(d)
			what = fmt.Sprintf("latency %v", d)
		default:
			dropped := p.DropAll()
			if dropped == 0 {
				return ""
			}
			what = fmt.Sprintf("dropped %d connections", dropped)
		}
		n++
		return what
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
				DirectWorkers: 1, WorkMs: 60, Fault: networkFault(p), Every: 500 * time.Millisecond, Faults: 3, Recovers: true}
			if full() {
				sc.Jobs, sc.Faults, sc.Every, sc.Timeout = 5000, 300, time.Second, 15*time.Minute
			}
			runScenario(t, sc)
		})
	}
}
