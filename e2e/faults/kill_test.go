package faults_test

import (
	"testing"
	"time"
)

// TestSIGKILLWorkers kills worker processes with SIGKILL at random moments,
// repeatedly, while they drain the jobs; other workers rescue and finish
// what the dead ones held.
func TestSIGKILLWorkers(t *testing.T) {
	for _, s := range sharedStores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel() // one store per backend; the runs share only the CPU
			// Each job works 40 ms at most per step, as in the pause
			// scenario: with the 4 ms default, a fast store drained all
			// 200 jobs before the first kill found a worker holding one.
			sc := scenario{Name: "sigkill/" + s.Name, Store: s, Jobs: 200, Workers: 3, WorkMs: 40, Fault: killFault, Every: 300 * time.Millisecond, Faults: 5, Recovers: true}
			if full() {
				sc.Jobs, sc.Faults, sc.Every, sc.Timeout = 5000, 1000, 150*time.Millisecond, 15*time.Minute
			}
			runScenario(t, sc)
		})
	}
}
