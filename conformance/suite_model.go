package conformance

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"pgregory.net/rapid"
)

// testModel runs random sequences of operations against the backend and a
// small reference model, and compares them after every step.
//
// Each rapid check uses its own queue and task on one shared backend, and
// cancels its jobs when it ends, so that checks do not see each other. A
// failure prints the sequence and a seed; rerun the one case with
//
//	go test -run 'TestX/Model/StateMachine$' -rapid.seed=N
//
// (-rapid.checks=N sets how many sequences run; the default is 100, and 20
// under -short).
func testModel(t *testing.T, h Harness) {
	t.Run("StateMachine", func(t *testing.T) {
		e := newEnv(t, h)
		check := 0
		rapid.Check(t, func(rt *rapid.T) {
			check++
			m := &model{
				e: e, rt: rt, queue: fmt.Sprintf("m%d", check), task: fmt.Sprintf("t%d", check),
				byID: map[string]*mJob{}, keys: map[string]*mJob{},
			}
			rt.Cleanup(m.retire)
			actions := map[string]func(*rapid.T){
				"":           m.check,
				"enqueue":    m.enqueue,
				"claim":      m.claim,
				"complete":   m.complete,
				"fail":       m.fail,
				"sleep":      m.sleep,
				"heartbeat":  m.heartbeat,
				"checkpoint": m.checkpoint,
				"cancel":     m.cancel,
				"retry":      m.retry,
				"rescue":     m.rescue,
				"advance":    m.advance,
			}
			if h.Capabilities.Delete {
				actions["delete"] = m.delete
				actions["deleteQueue"] = m.deleteQueue
			}
			rt.Repeat(actions)
		})
	})
}

// mJob is the model's view of one job.
type mJob struct {
	id          string
	state       core.JobState
	priority    int
	runAt       time.Time
	attempt     int
	maxAttempts int
	token       int64
	expires     time.Time
	fingerprint string
	checkpoints map[string]string
}

// model is the reference the backend is compared with.
type model struct {
	e     *env
	rt    *rapid.T
	queue string
	task  string

	jobs   []*mJob // in id order
	byID   map[string]*mJob
	keys   map[string]*mJob
	leases []core.Lease // every lease handed out, current or stale
}

func (m *model) now() time.Time { return m.e.now() }

// retire cancels the check's unfinished jobs so that later checks' rescue
// passes do not see them.
func (m *model) retire() {
	for _, j := range m.jobs {
		_, _ = m.e.b.Cancel(m.e.ctx, j.id, "model check ended")
	}
}

func (m *model) enqueue(t *rapid.T) {
	n := rapid.IntRange(1, 3).Draw(t, "n")
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{
			Queue:          m.queue,
			Task:           m.task,
			Payload:        []byte(rapid.SampledFrom([]string{"a", "b"}).Draw(t, "payload")),
			Priority:       rapid.IntRange(-1, 1).Draw(t, "priority"),
			MaxAttempts:    rapid.IntRange(1, 3).Draw(t, "max_attempts"),
			IdempotencyKey: rapid.SampledFrom([]string{"", "", "k1", "k2"}).Draw(t, "key"),
		}
		if d := rapid.SampledFrom([]time.Duration{0, 0, time.Second, 3 * time.Second}).Draw(t, "delay"); d > 0 {
			reqs[i].RunAt = m.now().Add(d)
		}
	}
	// Predict: which items reuse which job, or a conflict.
	type pred struct {
		reuse *mJob
		batch int // index of an earlier item in this batch that this one reuses, or -1
	}
	preds := make([]pred, n)
	conflict := false
	batchKeys := map[string]int{}
	for i, r := range reqs {
		preds[i] = pred{batch: -1}
		if r.IdempotencyKey == "" {
			continue
		}
		fp := core.Fingerprint(r)
		if held, ok := m.keys[r.IdempotencyKey]; ok {
			if held.fingerprint != fp {
				conflict = true
			}
			preds[i].reuse = held
			continue
		}
		if k, ok := batchKeys[r.IdempotencyKey]; ok {
			if core.Fingerprint(reqs[k]) != fp {
				conflict = true
			}
			preds[i].batch = k
			continue
		}
		batchKeys[r.IdempotencyKey] = i
	}
	res, err := m.e.b.Enqueue(m.e.ctx, reqs)
	if conflict {
		if !errors.Is(err, core.ErrIdempotencyConflict) {
			t.Fatalf("Enqueue of a conflicting batch: %v, want ErrIdempotencyConflict", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if len(res) != n {
		t.Fatalf("Enqueue returned %d results for %d items", len(res), n)
	}
	for i, r := range res {
		p := preds[i]
		switch {
		case p.reuse != nil:
			if !r.Reused || r.Job.ID != p.reuse.id {
				t.Fatalf("item %d: got %s reused=%v, want reuse of %s", i, r.Job.ID, r.Reused, p.reuse.id)
			}
		case p.batch >= 0:
			if !r.Reused || r.Job.ID != res[p.batch].Job.ID {
				t.Fatalf("item %d: got %s reused=%v, want reuse of item %d", i, r.Job.ID, r.Reused, p.batch)
			}
		default:
			if r.Reused {
				t.Fatalf("item %d: reused %s, want a new job", i, r.Job.ID)
			}
			if _, dup := m.byID[r.Job.ID]; dup {
				t.Fatalf("item %d: new job has the id of an existing job %s", i, r.Job.ID)
			}
			runAt := m.now()
			if !reqs[i].RunAt.IsZero() {
				runAt = reqs[i].RunAt
			}
			j := &mJob{
				id: r.Job.ID, state: core.StateQueued, priority: reqs[i].Priority, runAt: runAt,
				maxAttempts: reqs[i].MaxAttempts, fingerprint: core.Fingerprint(reqs[i]), checkpoints: map[string]string{},
			}
			m.jobs = append(m.jobs, j)
			m.byID[j.id] = j
			if k := reqs[i].IdempotencyKey; k != "" {
				m.keys[k] = j
			}
		}
	}
	slices.SortFunc(m.jobs, func(a, b *mJob) int { return compareStrings(a.id, b.id) })
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (m *model) claim(t *rapid.T) {
	limit := rapid.IntRange(1, 3).Draw(t, "limit")
	ttl := rapid.SampledFrom([]time.Duration{time.Second, 5 * time.Second}).Draw(t, "ttl")
	now := m.now()
	var due []*mJob
	for _, j := range m.jobs {
		if (j.state == core.StateQueued || j.state == core.StateSleeping) && !j.runAt.After(now) {
			due = append(due, j)
		}
	}
	slices.SortStableFunc(due, func(a, b *mJob) int {
		if a.priority != b.priority {
			return a.priority - b.priority
		}
		if c := a.runAt.Compare(b.runAt); c != 0 {
			return c
		}
		return compareStrings(a.id, b.id)
	})
	want := due[:min(limit, len(due))]
	got, err := m.e.b.Claim(m.e.ctx, core.ClaimRequest{Queue: m.queue, WorkerID: "mw", Limit: limit, LeaseTTL: ttl})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	gotIDs := make([]string, len(got))
	for i, j := range got {
		gotIDs[i] = j.ID
	}
	wantIDs := make([]string, len(want))
	for i, j := range want {
		wantIDs[i] = j.id
	}
	slices.Sort(gotIDs)
	slices.Sort(wantIDs)
	if !slices.Equal(gotIDs, wantIDs) {
		t.Fatalf("Claim(limit %d) = %v, want %v", limit, gotIDs, wantIDs)
	}
	for _, j := range want {
		if j.state != core.StateSleeping {
			j.attempt++
		}
		j.state = core.StateRunning
		j.token++
		j.expires = now.Add(ttl)
	}
	for _, c := range got {
		j := m.byID[c.ID]
		if c.Attempt != j.attempt || c.Lease.Token != j.token || c.State != core.StateRunning || !c.Lease.ExpiresAt.Equal(j.expires) {
			t.Fatalf("claimed %s: attempt %d token %d state %s expires %v; want %d %d running %v",
				c.ID, c.Attempt, c.Lease.Token, c.State, c.Lease.ExpiresAt, j.attempt, j.token, j.expires)
		}
		m.leases = append(m.leases, c.Lease)
	}
}

// pickLease draws a lease that was handed out, current or stale.
func (m *model) pickLease(t *rapid.T) (core.Lease, *mJob, bool) {
	if len(m.leases) == 0 {
		t.Skip("no lease yet")
	}
	l := rapid.SampledFrom(m.leases).Draw(t, "lease")
	j := m.byID[l.JobID] // nil once the job is deleted: every lease of it is stale
	return l, j, j != nil && j.state == core.StateRunning && j.token == l.Token
}

func (m *model) requireFenced(t *rapid.T, err error, valid bool, what string) bool {
	if valid {
		if err != nil {
			t.Fatalf("%s with the current lease: %v", what, err)
		}
		return true
	}
	if !errors.Is(err, core.ErrLeaseLost) {
		t.Fatalf("%s with a stale lease: %v, want ErrLeaseLost", what, err)
	}
	return false
}

func (m *model) complete(t *rapid.T) {
	l, j, valid := m.pickLease(t)
	errs, err := m.e.b.Complete(m.e.ctx, []core.Completion{{Lease: l, Result: []byte("r")}})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if m.requireFenced(t, errs[0], valid, "Complete") {
		j.state = core.StateSucceeded
	}
}

func (m *model) fail(t *rapid.T) {
	l, j, valid := m.pickLease(t)
	terminal := rapid.Bool().Draw(t, "terminal")
	delay := rapid.SampledFrom([]time.Duration{-time.Second, 0, 2 * time.Second}).Draw(t, "retry_delay")
	st, err := m.e.b.Fail(m.e.ctx, core.Failure{Lease: l, Error: "boom", Terminal: terminal, RetryAt: m.now().Add(delay)})
	if !m.requireFenced(t, err, valid, "Fail") {
		return
	}
	if terminal || j.attempt >= j.maxAttempts {
		j.state = core.StateFailed
	} else {
		j.state = core.StateQueued
		j.runAt = m.now().Add(max(delay, 0))
	}
	if st != j.state {
		t.Fatalf("Fail returned %s, want %s", st, j.state)
	}
}

func (m *model) sleep(t *rapid.T) {
	l, j, valid := m.pickLease(t)
	d := rapid.SampledFrom([]time.Duration{-time.Second, 0, time.Second, 3 * time.Second}).Draw(t, "sleep")
	err := m.e.b.Sleep(m.e.ctx, l, m.now().Add(d))
	if m.requireFenced(t, err, valid, "Sleep") {
		j.state = core.StateSleeping
		j.runAt = m.now().Add(max(d, 0))
	}
}

func (m *model) heartbeat(t *rapid.T) {
	l, j, valid := m.pickLease(t)
	ttl := rapid.SampledFrom([]time.Duration{time.Second, 5 * time.Second}).Draw(t, "ttl")
	nl, err := m.e.b.Heartbeat(m.e.ctx, l, ttl)
	if m.requireFenced(t, err, valid, "Heartbeat") {
		j.expires = m.now().Add(ttl)
		if nl.Token != j.token || !nl.ExpiresAt.Equal(j.expires) {
			t.Fatalf("Heartbeat returned token %d expiry %v, want %d %v", nl.Token, nl.ExpiresAt, j.token, j.expires)
		}
	}
}

func (m *model) checkpoint(t *rapid.T) {
	l, j, valid := m.pickLease(t)
	step := rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "step")
	value := fmt.Sprintf("v%d", rapid.IntRange(0, 99).Draw(t, "value"))
	got, err := m.e.b.SaveCheckpoint(m.e.ctx, l, step, []byte(value))
	if m.requireFenced(t, err, valid, "SaveCheckpoint") {
		if _, ok := j.checkpoints[step]; !ok {
			j.checkpoints[step] = value
		}
		if string(got) != j.checkpoints[step] {
			t.Fatalf("SaveCheckpoint returned %q, want the first value %q", got, j.checkpoints[step])
		}
	}
	if j == nil {
		_, err := m.e.b.Checkpoints(m.e.ctx, l.JobID)
		if !errors.Is(err, core.ErrNotFound) {
			t.Fatalf("Checkpoints of a deleted job: %v, want ErrNotFound", err)
		}
		return
	}
	cs, err := m.e.b.Checkpoints(m.e.ctx, j.id)
	if err != nil {
		t.Fatalf("Checkpoints: %v", err)
	}
	if len(cs) != len(j.checkpoints) {
		t.Fatalf("job %s has %d checkpoints, want %d", j.id, len(cs), len(j.checkpoints))
	}
	for _, c := range cs {
		if j.checkpoints[c.Step] != string(c.Value) {
			t.Fatalf("checkpoint %s = %q, want %q", c.Step, c.Value, j.checkpoints[c.Step])
		}
	}
}

func (m *model) pickJob(t *rapid.T) *mJob {
	if len(m.jobs) == 0 {
		t.Skip("no job yet")
	}
	return rapid.SampledFrom(m.jobs).Draw(t, "job")
}

func (m *model) cancel(t *rapid.T) {
	j := m.pickJob(t)
	_, err := m.e.b.Cancel(m.e.ctx, j.id, "model")
	switch j.state {
	case core.StateSucceeded, core.StateFailed:
		if !errors.Is(err, core.ErrInvalidState) {
			t.Fatalf("Cancel of a %s job: %v, want ErrInvalidState", j.state, err)
		}
	default:
		if err != nil {
			t.Fatalf("Cancel of a %s job: %v", j.state, err)
		}
		j.state = core.StateCancelled
	}
}

func (m *model) retry(t *rapid.T) {
	j := m.pickJob(t)
	got, err := m.e.b.Retry(m.e.ctx, j.id)
	switch j.state {
	case core.StateFailed, core.StateCancelled:
		if err != nil {
			t.Fatalf("Retry of a %s job: %v", j.state, err)
		}
		j.state = core.StateQueued
		j.runAt = m.now()
		if j.attempt >= j.maxAttempts {
			j.maxAttempts = j.attempt + 1
		}
		if got.MaxAttempts != j.maxAttempts {
			t.Fatalf("Retry returned max attempts %d, want %d", got.MaxAttempts, j.maxAttempts)
		}
	default:
		if !errors.Is(err, core.ErrInvalidState) {
			t.Fatalf("Retry of a %s job: %v, want ErrInvalidState", j.state, err)
		}
	}
}

func (m *model) rescue(t *rapid.T) {
	now := m.now()
	var want core.RescueResult
	for _, j := range m.jobs {
		if j.state != core.StateRunning || j.expires.After(now) {
			continue
		}
		if j.attempt >= j.maxAttempts {
			j.state = core.StateFailed
			want.Failed++
		} else {
			j.state = core.StateQueued
			j.runAt = now
			want.Requeued++
		}
	}
	got, err := m.e.b.Rescue(m.e.ctx, core.RescueRequest{Limit: suiteLimits.MaxBatch})
	if err != nil {
		t.Fatalf("Rescue: %v", err)
	}
	if got != want {
		t.Fatalf("Rescue = %+v, want %+v", got, want)
	}
}

func (m *model) advance(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}).Draw(t, "advance")
	m.e.advance(d)
}

// forget removes a deleted job from the model, with the key it held.
func (m *model) forget(j *mJob) {
	m.jobs = slices.DeleteFunc(m.jobs, func(x *mJob) bool { return x == j })
	delete(m.byID, j.id)
	for k, held := range m.keys {
		if held == j {
			delete(m.keys, k)
		}
	}
}

func (m *model) delete(t *rapid.T) {
	j := m.pickJob(t)
	force := rapid.Bool().Draw(t, "force")
	err := m.e.deleter().DeleteJob(m.e.ctx, j.id, force)
	if j.state == core.StateRunning && !force {
		if !errors.Is(err, core.ErrInvalidState) {
			t.Fatalf("DeleteJob of a running job without force: %v, want ErrInvalidState", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("DeleteJob of a %s job (force %v): %v", j.state, force, err)
	}
	m.forget(j)
	if _, err := m.e.b.GetJob(m.e.ctx, j.id); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("GetJob of a deleted job: %v, want ErrNotFound", err)
	}
}

// deleteQueue runs one step of deleting the check's queue. Which jobs a
// step deletes is the backend's choice; the model learns it by listing.
func (m *model) deleteQueue(t *rapid.T) {
	limit := rapid.IntRange(1, 3).Draw(t, "limit")
	r, err := m.e.deleter().DeleteQueue(m.e.ctx, core.DeleteQueueRequest{Queue: m.queue, Limit: limit})
	if err != nil {
		t.Fatalf("DeleteQueue: %v", err)
	}
	page, err := m.e.b.ListJobs(m.e.ctx, core.JobFilter{Queue: m.queue, Limit: core.MaxPageSize})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	left := map[string]bool{}
	for _, j := range page.Jobs {
		left[j.ID] = true
	}
	var gone []*mJob
	for _, j := range m.jobs {
		if !left[j.id] {
			gone = append(gone, j)
		}
	}
	if r.Deleted != len(gone) || r.Deleted > limit || r.Done && len(page.Jobs) != 0 || !r.Done && r.Deleted == 0 && len(m.jobs) == 0 {
		t.Fatalf("DeleteQueue(limit %d) = %+v with %d of %d jobs gone and %d listed", limit, r, len(gone), len(m.jobs), len(page.Jobs))
	}
	for _, j := range gone {
		m.forget(j)
	}
}

// checkOps compares the model with the operations capabilities the
// harness declares: every run of the queue in order with the right open
// one, the keys, the counts of a search and the task's counts.
func (m *model) checkOps(t *rapid.T) {
	want := map[core.JobState]int64{}
	for _, j := range m.jobs {
		want[j.state]++
	}
	caps := m.e.h.Capabilities
	if caps.Runs {
		var wantRuns []string
		for _, j := range m.jobs {
			for tok := int64(1); tok <= j.token; tok++ {
				wantRuns = append(wantRuns, core.RunID(j.id, tok))
			}
		}
		p, err := m.e.runReader().ListAllRuns(m.e.ctx, core.RunFilter{Queue: m.queue, Limit: core.MaxPageSize})
		if err != nil {
			t.Fatalf("ListAllRuns: %v", err)
		}
		if !slices.Equal(runIDs(p.Runs), wantRuns) {
			t.Fatalf("ListAllRuns of the queue = %v, model %v", runIDs(p.Runs), wantRuns)
		}
		for _, r := range p.Runs {
			j := m.byID[r.JobID]
			open := j.state == core.StateRunning && r.Token == j.token
			if (r.Status == core.RunRunning) != open || r.Queue != m.queue || r.Task != m.task {
				t.Fatalf("run %s: status %s queue %s task %s; model: open %v", r.ID, r.Status, r.Queue, r.Task, open)
			}
		}
	}
	if caps.Search {
		for _, k := range []string{"k1", "k2"} {
			got, err := m.e.searcher().FindByIdempotencyKey(m.e.ctx, m.queue, k)
			if held, ok := m.keys[k]; ok {
				if err != nil || got.ID != held.id {
					t.Fatalf("FindByIdempotencyKey(%s) = %s, %v; model %s", k, got.ID, err, held.id)
				}
			} else if !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("FindByIdempotencyKey(%s) = %s, %v; model holds no job", k, got.ID, err)
			}
		}
		got, err := m.e.searcher().CountSearch(m.e.ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: m.queue}, IDPrefix: "0"})
		if err != nil {
			t.Fatalf("CountSearch: %v", err)
		}
		prefixed := map[core.JobState]int64{}
		for _, j := range m.jobs {
			if j.id[0] == '0' {
				prefixed[j.state]++
			}
		}
		if d := diff(prefixed, nonZero(got)); d != "" {
			t.Fatalf("CountSearch of the queue: %s", d)
		}
	}
	if caps.Tasks {
		ts, err := m.e.taskLister().ListTasks(m.e.ctx)
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		i := slices.IndexFunc(ts, func(ti core.TaskInfo) bool { return ti.Name == m.task })
		if (i >= 0) != (len(m.jobs) > 0) {
			t.Fatalf("ListTasks lists the task: %v; the model has %d jobs", i >= 0, len(m.jobs))
		}
		if i >= 0 {
			if d := diff(nonZero(want), nonZero(ts[i].Counts)); d != "" {
				t.Fatalf("ListTasks counts of the task: %s", d)
			}
		}
	}
}

// check compares every job of the model with the backend's listing.
func (m *model) check(t *rapid.T) {
	m.checkOps(t)
	page, err := m.e.b.ListJobs(m.e.ctx, core.JobFilter{Queue: m.queue, Limit: core.MaxPageSize})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if len(page.Jobs) != len(m.jobs) {
		t.Fatalf("backend lists %d jobs, model has %d", len(page.Jobs), len(m.jobs))
	}
	for i, got := range page.Jobs {
		j := m.jobs[i]
		if got.ID != j.id {
			t.Fatalf("job %d is %s, model has %s", i, got.ID, j.id)
		}
		if got.State != j.state || got.Attempt != j.attempt || got.MaxAttempts != j.maxAttempts || got.Lease.Token != j.token {
			t.Fatalf("job %s: state %s attempt %d/%d token %d; model %s %d/%d %d",
				j.id, got.State, got.Attempt, got.MaxAttempts, got.Lease.Token, j.state, j.attempt, j.maxAttempts, j.token)
		}
		if (j.state == core.StateQueued || j.state == core.StateSleeping) && !got.RunAt.Equal(j.runAt) {
			t.Fatalf("job %s (%s): run at %v, model %v", j.id, j.state, got.RunAt, j.runAt)
		}
		if j.state == core.StateRunning && !got.Lease.ExpiresAt.Equal(j.expires) {
			t.Fatalf("job %s: lease expires %v, model %v", j.id, got.Lease.ExpiresAt, j.expires)
		}
	}
}
