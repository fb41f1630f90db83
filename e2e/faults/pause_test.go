package faults_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// pauseFault stops a random worker process that holds running jobs with
// SIGSTOP for longer than its lease, then lets it go on with SIGCONT: a
// worker whose clock jumped. Its jobs are rescued and finished
// elsewhere meanwhile; when it wakes, its writes under the old leases
// must be refused. It does nothing while no worker holds a job.
func pauseFault(r *run) string {
	w, held := r.busyWorker()
	if w == nil {
		return ""
	}
	pid := w.cmd.Process.Pid
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return ""
	}
	time.Sleep(2 * leaseTTL) // the fault itself: the process is frozen past its lease
	_ = w.cmd.Process.Signal(syscall.SIGCONT)
	return fmt.Sprintf("SIGSTOP worker %s (pid %d, %d jobs running) for %v", w.id, pid, held, 2*leaseTTL)
}

// TestPausedWorker freezes worker processes past their lease.
func TestPausedWorker(t *testing.T) {
	for _, s := range sharedStores() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel() // one store per backend; the runs share only the CPU
			sc := scenario{Name: "sigstop/" + s.Name, Store: s, Jobs: 200, Workers: 3, WorkMs: 40, Fault: pauseFault, Every: 200 * time.Millisecond, Faults: 1, Recovers: true}
			if full() {
				sc.Jobs, sc.Faults, sc.Timeout = 5000, 100, 15*time.Minute
			}
			runScenario(t, sc)
		})
	}
}
