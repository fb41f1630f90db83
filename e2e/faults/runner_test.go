package faults_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// full reports whether the long versions of the scenarios run
// (BOSON_FAULTS_FULL=1).
func full() bool { return os.Getenv("BOSON_FAULTS_FULL") != "" }

// leaseTTL is the worker processes' lease.
const leaseTTL = time.Second

// scenario describes one run of the runner.
type scenario struct {
	Name    string
	Store   store
	Jobs    int // spawned jobs (a share fail on purpose, a share is cancelled)
	Workers int // worker processes kept alive
	// WorkerURL is the URL the worker processes dial (a proxy's, say);
	// empty means the store's own.
	WorkerURL string
	// DirectWorkers of the Workers dial the store's own URL even when
	// WorkerURL is set.
	DirectWorkers int
	// Fault injects one fault; the runner calls it every Every (at once
	// again after a call that injected nothing) until the jobs are done
	// or Faults faults fired. It returns a short description for the
	// log, or "" when it did nothing: a fault fires only when it
	// hits something (a worker that holds jobs, a store serving them). A
	// scenario with a Fault fails if none fired.
	Fault  func(r *run) string
	Every  time.Duration
	Faults int
	// Recovers marks a scenario whose faults take leases away from
	// running attempts: it fails unless the store recovered (marked lost)
	// at least one run.
	Recovers bool
	// WorkMs bounds the random work in each step and after the last; 0
	// means 4 ms.
	WorkMs int
	// Timeout bounds the whole scenario.
	Timeout time.Duration
}

// run is one scenario in progress.
type run struct {
	t       *testing.T
	sc      scenario
	ctx     context.Context
	b       core.QueueBackend // the parent's own view, straight to the store
	locator string
	queue   string
	record  string

	mu      sync.Mutex
	workers map[int]*worker // by slot
	seq     int
	faults  atomic.Int64
	spawned map[string]planned
}

// worker is one worker process.
type worker struct {
	id   string // its worker id, as the store's leases name it
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

// runScenario spawns the jobs, keeps sc.Workers worker processes running,
// injects faults until every job is terminal, then checks the invariants
// from the store (check_test.go), failing the test on every broken one,
// and prints the figures.
func runScenario(t *testing.T, sc scenario) report {
	t.Helper()
	if sc.WorkMs == 0 {
		sc.WorkMs = 4
	}
	if sc.Timeout == 0 {
		sc.Timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), sc.Timeout)
	defer cancel()
	r := &run{t: t, sc: sc, ctx: ctx, locator: sc.Store.Locator(t), queue: "faults", record: t.TempDir(),
		workers: map[int]*worker{}, spawned: map[string]planned{}}
	r.b = sc.Store.Open(t, sc.Store.URL, r.locator, true)
	client, err := boson.NewClient(r.b, boson.ClientOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r.spawn(client)
	for i := 0; i < sc.Workers; i++ {
		r.startWorker(i)
	}
	defer r.stopAll()

	// Faults start once the workers run jobs, and go on until the jobs
	// are done or enough were injected.
	r.waitStarted()
	var next time.Time
	for {
		if r.terminal() {
			break
		}
		if ctx.Err() != nil {
			counts, _ := r.b.CountJobs(context.Background(), core.JobFilter{Queue: r.queue})
			t.Fatalf("%s: jobs not terminal after %v: %v", sc.Name, sc.Timeout, counts)
		}
		if sc.Fault != nil && int(r.faults.Load()) < sc.Faults && time.Now().After(next) {
			// A fault that found nothing to hit (no worker held a job
			// yet, as the store told it) is tried again at once rather
			// than an Every later, when the jobs may all be done.
			if what := sc.Fault(r); what != "" {
				r.faults.Add(1)
				t.Logf("fault %d: %s", r.faults.Load(), what)
				next = time.Now().Add(sc.Every)
			}
		}
		r.keepWorkers()
		time.Sleep(20 * time.Millisecond)
	}
	r.stopAll()
	rep := r.check()
	fmt.Printf("faults %-28s %s\n", sc.Name+":", rep)
	t.Logf("%s", rep)
	writeRow(t, sc.Name, rep)
	return rep
}

// spawn stores the jobs: a mix of zero to three steps, 2% planned
// failures, and 2% cancelled right away (before any worker runs).
func (r *run) spawn(client *boson.Client) {
	const batch = 500
	for start := 0; start < r.sc.Jobs; start += batch {
		n := min(batch, r.sc.Jobs-start)
		ins := make([]In, n)
		for i := range ins {
			k := start + i
			ins[i] = In{N: k, Steps: k % 4, WorkMs: r.sc.WorkMs, Fail: k%50 == 7}
		}
		hs, err := boson.SpawnBatch(r.ctx, client, faultTask, ins, boson.WithQueue(r.queue), boson.WithMaxAttempts(100),
			boson.WithRetry(core.RetryPolicy{Initial: 10 * time.Millisecond, Factor: 2, Max: 100 * time.Millisecond}))
		if err != nil {
			r.t.Fatalf("spawn: %v", err)
		}
		for i, h := range hs {
			p := planned{In: ins[i], Cancel: (start+i)%50 == 13}
			if p.Cancel {
				if err := h.Cancel(r.ctx, "cancelled by the scenario"); err != nil {
					r.t.Fatalf("cancel: %v", err)
				}
			}
			r.spawned[h.ID()] = p
		}
	}
}

// waitStarted waits until every worker process has started a job (or
// the jobs are done).
func (r *run) waitStarted() {
	for r.ctx.Err() == nil {
		files, _ := filepath.Glob(filepath.Join(r.record, "*.jsonl"))
		busy := 0
		for _, f := range files {
			if st, err := os.Stat(f); err == nil && st.Size() > 0 {
				busy++
			}
		}
		if busy >= r.sc.Workers || r.terminal() {
			return
		}
		r.keepWorkers()
		time.Sleep(10 * time.Millisecond)
	}
}

// running returns how many jobs are running, by the store.
func (r *run) running() int64 {
	counts, _ := r.b.CountJobs(r.ctx, core.JobFilter{Queue: r.queue})
	return counts[core.StateRunning]
}

func (r *run) terminal() bool {
	counts, err := r.b.CountJobs(r.ctx, core.JobFilter{Queue: r.queue})
	if err != nil {
		return false // the store may be restarting
	}
	var done int64
	for st, n := range counts {
		if st.Terminal() {
			done += n
		} else if n > 0 {
			return false
		}
	}
	return done == int64(r.sc.Jobs)
}

// startWorker starts the worker process of slot i.
func (r *run) startWorker(slot int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	url := r.sc.WorkerURL
	if url == "" || slot < r.sc.DirectWorkers {
		url = r.sc.Store.URL
	}
	id := "w" + strconv.Itoa(slot) + "-" + strconv.Itoa(r.seq)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultWorkerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envStore+"="+r.sc.Store.Name, envURL+"="+url, envLocator+"="+r.locator,
		envQueue+"="+r.queue, envRecord+"="+r.record, envWorker+"="+id, envLease+"="+leaseTTL.String())
	w := &worker{id: id, cmd: cmd, out: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w.out, w.out
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start worker: %v", err)
	}
	go func() { _ = cmd.Wait(); close(w.done) }()
	r.workers[slot] = w
}

// keepWorkers restarts the worker of every slot whose process has exited.
func (r *run) keepWorkers() {
	r.mu.Lock()
	var dead []int
	for slot, w := range r.workers {
		select {
		case <-w.done:
			dead = append(dead, slot)
		default:
		}
	}
	r.mu.Unlock()
	for _, slot := range dead {
		if w := r.workers[slot]; w.cmd.ProcessState != nil && w.cmd.ProcessState.Exited() && testing.Verbose() {
			r.t.Logf("worker exited (%v): %s", w.cmd.ProcessState, lastLines(w.out.String(), 5))
		}
		r.startWorker(slot)
	}
}

// busyWorker returns a live worker process, chosen at random among those
// that hold running jobs by the store, and how many it holds; nil when no
// live worker holds one. slots, when given, limits the choice to those
// slots.
func (r *run) busyWorker(slots ...int) (*worker, int) {
	held := map[string]int{}
	f := core.JobFilter{Queue: r.queue, States: []core.JobState{core.StateRunning}, Limit: core.MaxPageSize}
	for {
		page, err := r.b.ListJobs(r.ctx, f)
		if err != nil {
			return nil, 0 // the store may be restarting; try again later
		}
		for _, j := range page.Jobs {
			held[j.Lease.WorkerID]++
		}
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var busy []*worker
	for slot, w := range r.workers {
		if len(slots) > 0 && !slices.Contains(slots, slot) {
			continue
		}
		select {
		case <-w.done:
			continue
		default:
		}
		if held[w.id] > 0 {
			busy = append(busy, w)
		}
	}
	if len(busy) == 0 {
		return nil, 0
	}
	w := busy[rand.IntN(len(busy))]
	return w, held[w.id]
}

// stopAll stops every worker with SIGTERM (SIGKILL after a while) and
// waits for it.
func (r *run) stopAll() {
	r.mu.Lock()
	ws := r.workers
	r.workers = map[int]*worker{}
	r.mu.Unlock()
	for _, w := range ws {
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range ws {
		select {
		case <-w.done:
		case <-time.After(15 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	}
}

// killFault kills a random worker process that holds running jobs with
// SIGKILL; keepWorkers starts another in its slot. It does nothing while
// no worker holds a job.
func killFault(r *run) string {
	w, held := r.busyWorker()
	if w == nil {
		return ""
	}
	if err := w.cmd.Process.Kill(); err != nil {
		return ""
	}
	<-w.done
	return fmt.Sprintf("SIGKILL worker %s (pid %d, %d jobs running)", w.id, w.cmd.Process.Pid, held)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
