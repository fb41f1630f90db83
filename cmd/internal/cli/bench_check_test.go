package cli

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/boson-go/boson/core"
)

// Faults that faultyBackend plants, one job per queue.
const (
	// loseCompletion acknowledges the completion of the queue's first
	// claimed job without writing it: the job stays running in the store.
	loseCompletion = "lose a completion"
	// completeTwice hands the queue's first claimed job out a second time,
	// beside the next claim, and accepts its second completion as if the
	// store had no fence.
	completeTwice = "complete a job twice"
)

// faultyBackend wraps a real backend and breaks one of its promises for
// the first job claimed in each queue, so that every scenario of a bench
// run meets the fault once. It records the jobs it broke.
type faultyBackend struct {
	core.QueueBackend
	fault string

	mu      sync.Mutex
	victim  map[string]string   // queue → the job the fault hit
	queueOf map[string]string   // victim job → its queue
	again   map[string]core.Job // completeTwice: queue → job to hand out again
	done    map[string]bool     // victims whose fault has happened
	twice   map[string]bool     // completeTwice: victims completed a second time
}

func newFaulty(b core.QueueBackend, fault string) *faultyBackend {
	return &faultyBackend{
		QueueBackend: b, fault: fault,
		victim: map[string]string{}, queueOf: map[string]string{}, again: map[string]core.Job{}, done: map[string]bool{}, twice: map[string]bool{},
	}
}

// victims returns the broken jobs by queue.
func (f *faultyBackend) victims() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for q, id := range f.victim {
		if f.done[id] {
			out[q] = id
		}
	}
	return out
}

// Subscribe keeps the wrapped backend's notifications, so that the
// worker's wake-ups are those of the real store.
func (f *faultyBackend) Subscribe(queue string) (<-chan struct{}, func()) {
	if n, ok := f.QueueBackend.(core.Notifier); ok {
		return n.Subscribe(queue)
	}
	return nil, func() {}
}

// Claim claims from the real backend, picks the queue's first claimed job
// as its victim and, for completeTwice, adds the victim to the next claim
// that has room for it.
func (f *faultyBackend) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	var extra []core.Job
	f.mu.Lock()
	if j, ok := f.again[req.Queue]; ok && req.Limit > 1 {
		delete(f.again, req.Queue)
		f.done[j.ID] = true
		extra = append(extra, j)
		req.Limit--
	}
	f.mu.Unlock()
	jobs, err := f.QueueBackend.Claim(ctx, req)
	if err != nil {
		return jobs, err
	}
	f.mu.Lock()
	if _, picked := f.victim[req.Queue]; !picked && len(jobs) > 0 {
		f.victim[req.Queue] = jobs[0].ID
		f.queueOf[jobs[0].ID] = req.Queue
		if f.fault == completeTwice {
			f.again[req.Queue] = jobs[0]
		}
	}
	f.mu.Unlock()
	return append(jobs, extra...), nil
}

// Complete writes the completions to the real backend, but drops the
// victim's (loseCompletion) or turns the refusal of its second completion
// into a success (completeTwice).
func (f *faultyBackend) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := make([]error, len(items))
	var send []core.Completion
	var at []int
	for i, it := range items {
		id := it.Lease.JobID
		if f.fault == loseCompletion && f.queueOf[id] != "" && !f.done[id] {
			f.done[id] = true
			continue // acknowledged, never written
		}
		send = append(send, it)
		at = append(at, i)
	}
	if len(send) > 0 {
		res, err := f.QueueBackend.Complete(ctx, send)
		if err != nil {
			return nil, err
		}
		for k, e := range res {
			id := send[k].Lease.JobID
			if e != nil && f.fault == completeTwice && f.done[id] && !f.twice[id] {
				f.twice[id] = true
				e = nil // the second completion of a job handed out twice
			}
			errs[at[k]] = e
		}
	}
	return errs, nil
}

// checkFailed matches the table's lines of a failed self-check.
var checkFailed = regexp.MustCompile(`(?m)^CHECK FAILED (\S+): (.*)$`)

// TestBenchCheckCatchesFaults runs "boson bench --quick" on the memory
// backend broken by each fault: every scenario that runs jobs must fail
// its self-check naming the job the fault hit in its queue, and the
// command must exit 5.
func TestBenchCheckCatchesFaults(t *testing.T) {
	scenarios := []string{"ceiling", "batch-noop", "batch-work", "mixed", "roundtrip"}
	for _, fault := range []string{loseCompletion, completeTwice} {
		t.Run(strings.ReplaceAll(fault, " ", "-"), func(t *testing.T) {
			var fb *faultyBackend
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{
				"bench", "mem:", "--quick", "-n", fmt.Sprint(smokeJobs), "--no-progress",
				"--scenarios", "ceiling,batch,mixed,roundtrip", "--round-trips", "10",
				"--mixed-rate", "400", "--mixed-duration", "250ms", "--spawn-batch", "100",
				// Several raw claims, so that one can carry a job again.
				"--ceiling-batch", "50",
			}, Env{
				Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				wrapBackend: func(b core.QueueBackend) core.QueueBackend {
					fb = newFaulty(b, fault)
					return fb
				},
			})
			if code != ExitCheckFailed {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitCheckFailed, out.String(), errb.String())
			}
			if !strings.Contains(errb.String(), "self-check FAILED on mem") {
				t.Errorf("stderr does not report the failed check:\n%s", errb.String())
			}
			problems := map[string][]string{}
			for _, m := range checkFailed.FindAllStringSubmatch(out.String(), -1) {
				problems[m[1]] = append(problems[m[1]], m[2])
			}
			victims := fb.victims()
			if len(victims) != len(scenarios) {
				t.Fatalf("the fault hit %d queues (%v), want one per scenario %v\n%s", len(victims), victims, scenarios, out.String())
			}
			for _, s := range scenarios {
				var queue, id string
				for q, v := range victims {
					if strings.HasPrefix(q, "bench-"+s+"-") {
						queue, id = q, v
					}
				}
				if queue == "" {
					t.Errorf("%s: the fault hit none of its queues (%v)", s, victims)
					continue
				}
				if !slices.ContainsFunc(problems[s], func(p string) bool { return strings.Contains(p, id) }) {
					t.Errorf("%s: the self-check does not name job %s of %s; it found %q", s, id, queue, problems[s])
				}
			}
		})
	}
}
