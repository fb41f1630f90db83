package conformance

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testDelete: core.JobDeleter — deleting jobs in every state, with force
// for running ones, and queues in bounded steps.
func testDelete(t *testing.T, h Harness) {
	if !h.Capabilities.Delete {
		cases(t, h, map[string]func(e *env){"Undeclared": deleteUndeclared})
		return
	}
	cases(t, h, map[string]func(e *env){
		"EachState":              deleteEachState,
		"RunningRefused":         deleteRunningRefused,
		"ForceRunning":           deleteForceRunning,
		"ForceNotRescued":        deleteForceNotRescued,
		"ReleasesKey":            deleteReleasesKey,
		"Counts":                 deleteCounts,
		"NotFoundAndInvalid":     deleteNotFound,
		"Queue":                  deleteQueue,
		"QueueEmpty":             deleteQueueEmpty,
		"QueueInvalid":           deleteQueueInvalid,
		"QueueWhileClaiming":     deleteQueueWhileClaiming,
		"WithRunsAndSearch":      deleteWithCapabilities,
		"QueueReleasesKeys":      deleteQueueKeys,
		"QueueLeavesOthers":      deleteQueueOthers,
		"QueueRunningLeases":     deleteQueueLeases,
		"QueueEnqueuedMeanwhile": deleteQueueMeanwhile,
	})
}

func (e *env) deleteJob(id string, force bool) {
	e.t.Helper()
	if err := e.deleter().DeleteJob(e.ctx, id, force); err != nil {
		e.t.Fatalf("DeleteJob(%s, force %v): %v", id, force, err)
	}
}

// requireGone checks that a job, its runs and its checkpoints are gone.
func (e *env) requireGone(id, what string) {
	e.t.Helper()
	_, err := e.b.GetJob(e.ctx, id)
	requireErr(e.t, err, core.ErrNotFound, "GetJob of "+what)
	_, err = e.b.ListRuns(e.ctx, id)
	requireErr(e.t, err, core.ErrNotFound, "ListRuns of "+what)
	_, err = e.b.Checkpoints(e.ctx, id)
	requireErr(e.t, err, core.ErrNotFound, "Checkpoints of "+what)
	if e.h.Capabilities.Runs {
		_, err = e.runReader().GetRun(e.ctx, core.RunID(id, 1))
		requireErr(e.t, err, core.ErrNotFound, "GetRun of "+what)
		p, err := e.runReader().ListAllRuns(e.ctx, core.RunFilter{JobID: id})
		if err != nil || len(p.Runs) != 0 {
			e.t.Fatalf("ListAllRuns of %s: %d runs, %v; want none", what, len(p.Runs), err)
		}
	}
	if e.h.Capabilities.Search {
		p, err := e.searcher().SearchJobs(e.ctx, core.JobSearch{IDs: []string{id}})
		if err != nil || len(p.Jobs) != 0 {
			e.t.Fatalf("SearchJobs of %s: %d jobs, %v; want none", what, len(p.Jobs), err)
		}
	}
}

// deleteFixture makes one job in each state, each with a checkpoint when
// it ran, and returns them by state ("scheduled" is queued for later).
func deleteFixture(e *env) map[string]core.Job {
	out := map[string]core.Job{}
	out["queued"] = e.enqueueOne(req("q", "t"))
	later := req("q", "t")
	later.RunAt = e.now().Add(time.Hour)
	out["scheduled"] = e.enqueueOne(later)
	run := func(state string, end func(l core.Lease)) {
		j := e.enqueueClaim(req("q-"+state, "t"))
		e.save(j.Lease, "step", state)
		end(j.Lease)
		out[state] = j
	}
	run("sleeping", func(l core.Lease) { e.sleep(l, e.now().Add(time.Hour)) })
	run("succeeded", func(l core.Lease) { e.complete(l, []byte("1")) })
	run("failed", func(l core.Lease) { e.fail(core.Failure{Lease: l, Error: "x", Terminal: true}) })
	run("cancelled", func(l core.Lease) { e.cancel(l.JobID, "stop") })
	run("running", func(core.Lease) {})
	return out
}

func deleteEachState(e *env) {
	jobs := deleteFixture(e)
	bystander := e.enqueueOne(req("q", "t"))
	before := e.snap(bystander.ID)
	for _, state := range sortedKeys(jobs) {
		if state == "running" {
			continue
		}
		j := jobs[state]
		e.deleteJob(j.ID, false)
		e.requireGone(j.ID, "a deleted "+state+" job")
		err := e.deleter().DeleteJob(e.ctx, j.ID, false)
		requireErr(e.t, err, core.ErrNotFound, "a second DeleteJob of a "+state+" job")
	}
	e.requireUnchanged(before, "deleting other jobs")
	e.advance(2 * time.Hour)
	got := e.claim("q", 10)
	if len(got) != 1 || got[0].ID != bystander.ID {
		e.t.Fatalf("claimed %v after deletions, want only %s", ids(got), bystander.ID)
	}
	e.claimNone("q-sleeping", "the sleeping job was deleted")
}

func deleteRunningRefused(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.save(j.Lease, "s", "v")
	before := e.snap(j.ID)
	err := e.deleter().DeleteJob(e.ctx, j.ID, false)
	requireErr(e.t, err, core.ErrInvalidState, "DeleteJob of a running job without force")
	e.requireUnchanged(before, "a refused DeleteJob")
	e.complete(j.Lease, nil) // the lease still holds
	e.deleteJob(j.ID, false)
	e.requireGone(j.ID, "a job deleted after it completed")
}

func deleteForceRunning(e *env) {
	for _, name := range sortedKeys(fencedCalls) {
		j := e.enqueueClaim(req("q", "t"))
		e.save(j.Lease, "s0", "v")
		e.deleteJob(j.ID, true)
		e.requireGone(j.ID, "a force-deleted running job")
		requireErr(e.t, fencedCalls[name](e, j.Lease), core.ErrLeaseLost, name+" with the lease of a force-deleted job")
		e.requireGone(j.ID, "a force-deleted job after "+name+" with its old lease")
	}
	requireEq(e.t, e.total(), 0, "jobs left")
}

func deleteForceNotRescued(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.deleteJob(j.ID, true)
	e.advance(2 * leaseTTL)
	if r := e.rescue(100); r.Total() != 0 {
		e.t.Fatalf("Rescue after a force delete = %+v, want nothing", r)
	}
	e.claimNone("q", "the job was deleted while it ran")
	e.requireGone(j.ID, "a force-deleted job after rescue")
}

func deleteReleasesKey(e *env) {
	for _, state := range []string{"queued", "succeeded", "running"} {
		r := withKey("q", "key-"+state)
		j := e.enqueueOne(r)
		switch state {
		case "succeeded":
			c := e.claimOne("q")
			e.complete(c.Lease, nil)
		case "running":
			e.claimOne("q")
		}
		if e.h.Capabilities.Search {
			requireEq(e.t, e.findByKey("q", r.IdempotencyKey).ID, j.ID, "the key's job before the delete")
		}
		e.deleteJob(j.ID, state == "running")
		if e.h.Capabilities.Search {
			e.requireNoKey("q", r.IdempotencyKey, "after its job was deleted")
		}
		// Another payload under the same key: a conflict if the key were held.
		r.Payload = []byte(`{"n":2}`)
		res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{r})
		if err != nil {
			e.t.Fatalf("Enqueue with the key of a deleted %s job: %v", state, err)
		}
		if res[0].Reused || res[0].Job.ID == j.ID {
			e.t.Fatalf("Enqueue with the key of a deleted %s job reused it", state)
		}
		if e.h.Capabilities.Search {
			requireEq(e.t, e.findByKey("q", r.IdempotencyKey).ID, res[0].Job.ID, "the key's new job")
		}
		e.deleteJob(res[0].Job.ID, false)
	}
}

func deleteCounts(e *env) {
	jobs := deleteFixture(e)
	for _, j := range jobs {
		e.deleteJob(j.ID, true)
	}
	requireEq(e.t, e.total(), 0, "jobs counted after deleting all")
	st, err := e.b.TaskStats(e.ctx, "t")
	if err != nil {
		e.t.Fatalf("TaskStats: %v", err)
	}
	if len(nonZero(st.Jobs)) != 0 || len(nonZero(st.Runs)) != 0 {
		e.t.Fatalf("TaskStats after deleting every job: %+v", st)
	}
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	for _, q := range qs {
		if len(nonZero(q.Jobs)) != 0 {
			e.t.Fatalf("ListQueues after deleting every job counts %+v", q)
		}
	}
	if e.h.Capabilities.Runs {
		if m := e.countRuns(core.RunFilter{}); len(m) != 0 {
			e.t.Fatalf("CountRuns after deleting every job: %v", m)
		}
	}
	if e.h.Capabilities.Tasks {
		e.requireTasks(nil, "after deleting every job")
	}
	// The store still works: the deleted jobs' queue takes new ones.
	n := e.enqueueClaim(req("q-running", "t"))
	e.complete(n.Lease, nil)
}

func deleteNotFound(e *env) {
	e.enqueueOne(req("q", "t"))
	err := e.deleter().DeleteJob(e.ctx, core.NewID(e.now()), false)
	requireErr(e.t, err, core.ErrNotFound, "DeleteJob of an unknown id")
	err = e.deleter().DeleteJob(e.ctx, core.NewID(e.now()), true)
	requireErr(e.t, err, core.ErrNotFound, "DeleteJob with force of an unknown id")
	err = e.deleter().DeleteJob(e.ctx, "", false)
	requireErr(e.t, err, core.ErrInvalidArgument, "DeleteJob of an empty id")
	err = e.deleter().DeleteJob(e.ctx, strings.Repeat("x", core.MaxNameLength+1), false)
	requireErr(e.t, err, core.ErrInvalidArgument, "DeleteJob of a too long id")
	if err := e.deleter().DeleteJob(e.ctx, "not-an-id", false); !errors.Is(err, core.ErrNotFound) && !errors.Is(err, core.ErrInvalidArgument) {
		e.t.Fatalf("DeleteJob of a malformed id: %v, want ErrNotFound or ErrInvalidArgument", err)
	}
	requireEq(e.t, e.total(), 1, "jobs left")
}

// deleteQueueSteps calls DeleteQueue with limit until Done, running
// between after every step that is not done. It checks each step's bound
// and returns how many jobs the steps deleted.
func (e *env) deleteQueueSteps(queue string, limit int, between func(step int)) (deleted, steps int) {
	e.t.Helper()
	for steps = 1; ; steps++ {
		if steps > 10_000 {
			e.t.Fatalf("DeleteQueue(%s) is not done after %d steps", queue, steps)
		}
		r, err := e.deleter().DeleteQueue(e.ctx, core.DeleteQueueRequest{Queue: queue, Limit: limit})
		if err != nil {
			e.t.Fatalf("DeleteQueue(%s, %d) step %d: %v", queue, limit, steps, err)
		}
		if r.Deleted < 0 || r.Deleted > limit {
			e.t.Fatalf("DeleteQueue step %d deleted %d jobs, limit %d", steps, r.Deleted, limit)
		}
		deleted += r.Deleted
		if r.Done {
			return deleted, steps
		}
		if between != nil {
			between(steps)
		}
	}
}

// requireQueueGone checks that a queue has no job and no config left.
func (e *env) requireQueueGone(queue string) {
	e.t.Helper()
	if m := e.count(core.JobFilter{Queue: queue}); len(m) != 0 {
		e.t.Fatalf("queue %s still counts %v", queue, m)
	}
	if p := e.list(core.JobFilter{Queue: queue}); len(p.Jobs) != 0 {
		e.t.Fatalf("queue %s still lists %d jobs", queue, len(p.Jobs))
	}
	cfg, err := e.b.GetQueueConfig(e.ctx, queue)
	if err != nil {
		e.t.Fatalf("GetQueueConfig(%s): %v", queue, err)
	}
	if d := diff(core.QueueConfig{Queue: queue}, cfg); d != "" {
		e.t.Fatalf("queue %s keeps its config: %s", queue, d)
	}
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	for _, q := range qs {
		if q.Queue == queue {
			e.t.Fatalf("ListQueues still lists %+v", q)
		}
	}
	e.claimNone(queue, "the queue was deleted")
}

// doomedQueue fills queue "doomed" with n jobs in every state, a paused
// config and keys, and returns the jobs and the lease of a running one.
func doomedQueue(e *env, n int) ([]core.Job, core.Lease) {
	var reqs []core.EnqueueRequest
	for i := range n {
		r := withKey("doomed", fmt.Sprintf("k%d", i))
		r.Task = []string{"t", "u"}[i%2]
		reqs = append(reqs, r)
	}
	jobs := e.enqueue(reqs...)
	c := e.claim("doomed", 5)
	e.complete(c[0].Lease, nil)
	e.fail(core.Failure{Lease: c[1].Lease, Error: "x", Terminal: true})
	e.sleep(c[2].Lease, e.now().Add(time.Hour))
	e.save(c[3].Lease, "s", "v")
	e.cancel(jobs[n-1].ID, "")
	e.putQueueConfig(core.QueueConfig{Queue: "doomed", Paused: true, RetentionTTL: time.Hour})
	return jobs, c[3].Lease
}

func deleteQueue(e *env) {
	jobs, _ := doomedQueue(e, 23)
	deleted, steps := e.deleteQueueSteps("doomed", 5, nil)
	requireEq(e.t, deleted, len(jobs), "jobs deleted over every step")
	if steps > 6 {
		e.t.Fatalf("DeleteQueue took %d steps of 5 for 23 jobs, want at most 6", steps)
	}
	for _, j := range jobs {
		e.requireGone(j.ID, "a job of a deleted queue")
	}
	e.requireQueueGone("doomed")
	r, err := e.deleter().DeleteQueue(e.ctx, core.DeleteQueueRequest{Queue: "doomed", Limit: 5})
	if err != nil || r != (core.DeleteQueueResult{Done: true}) {
		e.t.Fatalf("DeleteQueue of a deleted queue = %+v, %v; want done with nothing deleted", r, err)
	}
	// The queue name is usable again, unpaused.
	j := e.enqueueClaim(req("doomed", "t"))
	e.complete(j.Lease, nil)
}

func deleteQueueEmpty(e *env) {
	r, err := e.deleter().DeleteQueue(e.ctx, core.DeleteQueueRequest{Queue: "never", Limit: 1})
	if err != nil || r != (core.DeleteQueueResult{Done: true}) {
		e.t.Fatalf("DeleteQueue of an unknown queue = %+v, %v; want done with nothing deleted", r, err)
	}
	e.putQueueConfig(core.QueueConfig{Queue: "configured", Paused: true})
	r, err = e.deleter().DeleteQueue(e.ctx, core.DeleteQueueRequest{Queue: "configured", Limit: 1})
	if err != nil || r != (core.DeleteQueueResult{Done: true}) {
		e.t.Fatalf("DeleteQueue of a config-only queue = %+v, %v; want done with nothing deleted", r, err)
	}
	e.requireQueueGone("configured")
}

func deleteQueueInvalid(e *env) {
	e.enqueueOne(req("q", "t"))
	for _, r := range []core.DeleteQueueRequest{
		{Queue: "q", Limit: 0},
		{Queue: "q", Limit: -1},
		{Queue: "q", Limit: suiteLimits.MaxBatch + 1},
		{Queue: "", Limit: 1},
		{Queue: "bad queue", Limit: 1},
	} {
		_, err := e.deleter().DeleteQueue(e.ctx, r)
		requireErr(e.t, err, core.ErrInvalidArgument, fmt.Sprintf("DeleteQueue(%+v)", r))
	}
	requireEq(e.t, e.total(), 1, "jobs left")
}

func deleteQueueOthers(e *env) {
	doomedQueue(e, 12)
	kept := e.enqueueN("kept", "t", 6)
	c := e.claim("kept", 2)
	e.complete(c[0].Lease, nil)
	e.save(c[1].Lease, "s", "v")
	keptKey := e.enqueueOne(withKey("kept", "k1")) // the same key as a doomed job
	e.putQueueConfig(core.QueueConfig{Queue: "kept", Paused: true})
	e.putTaskConfig(core.TaskConfig{Task: "u", MaxInFlight: 50})
	var before []snapshot
	for _, j := range append(kept, keptKey) {
		before = append(before, e.snap(j.ID))
	}
	e.deleteQueueSteps("doomed", 4, nil)
	for _, s := range before {
		e.requireUnchanged(s, "deleting another queue")
	}
	cfg, err := e.b.GetQueueConfig(e.ctx, "kept")
	if err != nil || !cfg.Paused {
		e.t.Fatalf("the other queue's config after DeleteQueue = %+v, %v", cfg, err)
	}
	tc, err := e.b.GetTaskConfig(e.ctx, "u")
	if err != nil || tc.MaxInFlight != 50 {
		e.t.Fatalf("a task config after DeleteQueue = %+v, %v; task configs are not a queue's", tc, err)
	}
	if e.h.Capabilities.Search {
		requireEq(e.t, e.findByKey("kept", "k1").ID, keptKey.ID, "the other queue's key")
	}
	e.complete(c[1].Lease, nil) // the other queue's lease still holds
}

func deleteQueueKeys(e *env) {
	jobs, _ := doomedQueue(e, 8)
	e.deleteQueueSteps("doomed", 3, nil)
	for i := range jobs {
		r := withKey("doomed", fmt.Sprintf("k%d", i))
		r.Payload = []byte(`{"n":3}`)
		res, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{r})
		if err != nil || res[0].Reused {
			e.t.Fatalf("Enqueue with key k%d of a deleted queue: %+v, %v; want a new job", i, res, err)
		}
	}
}

func deleteQueueLeases(e *env) {
	_, lease := doomedQueue(e, 8)
	e.deleteQueueSteps("doomed", 2, nil)
	for _, name := range sortedKeys(fencedCalls) {
		requireErr(e.t, fencedCalls[name](e, lease), core.ErrLeaseLost, name+" with the lease of a job of a deleted queue")
	}
	e.requireGone(lease.JobID, "a running job of a deleted queue")
}

func deleteQueueMeanwhile(e *env) {
	jobs, _ := doomedQueue(e, 10)
	added := 0
	deleted, _ := e.deleteQueueSteps("doomed", 3, func(step int) {
		if step <= 3 {
			jobs = append(jobs, e.enqueueN("doomed", "t", 2)...)
			added += 2
		}
	})
	requireEq(e.t, added, 6, "jobs enqueued while the queue was deleted")
	requireEq(e.t, deleted, len(jobs), "jobs deleted")
	for _, j := range jobs {
		e.requireGone(j.ID, "a job of a deleted queue")
	}
	e.requireQueueGone("doomed")
}

// deleteQueueWhileClaiming deletes a queue while workers claim, complete
// and fail its jobs: every fenced call succeeds or reports ErrLeaseLost,
// nothing of the queue is left, and another queue's jobs all finish.
func deleteQueueWhileClaiming(e *env) {
	e.enqueueN("doomed", "t", 300)
	e.enqueueN("kept", "t", 100)
	var wg, started sync.WaitGroup
	errs := make(chan error, 8)
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			queue := []string{"doomed", "kept"}[w%2]
			first := true
			for {
				jobs, err := e.b.Claim(e.ctx, core.ClaimRequest{Queue: queue, WorkerID: fmt.Sprint("w", w), Limit: 5, LeaseTTL: time.Hour})
				if first {
					started.Done()
					first = false
				}
				if err != nil {
					errs <- fmt.Errorf("claim: %w", err)
					return
				}
				if len(jobs) == 0 && queue == "kept" {
					return // the other queue's workers drain it whatever happens
				}
				for i, j := range jobs {
					if i%3 == 2 {
						_, err = e.b.Fail(e.ctx, core.Failure{Lease: j.Lease, Error: "x", Terminal: true})
					} else {
						var ierrs []error
						ierrs, err = e.b.Complete(e.ctx, []core.Completion{{Lease: j.Lease}})
						if err == nil {
							err = ierrs[0]
						}
					}
					if err != nil && !(queue == "doomed" && errors.Is(err, core.ErrLeaseLost)) {
						errs <- fmt.Errorf("worker on %s: %w", queue, err)
						return
					}
				}
				if queue == "doomed" {
					select {
					case <-stop:
						return
					default:
					}
				}
			}
		}()
	}
	started.Wait()
	deleted, _ := e.deleteQueueSteps("doomed", 7, nil)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatal(err)
	}
	if deleted > 300 {
		e.t.Fatalf("deleted %d jobs of 300", deleted)
	}
	e.requireQueueGone("doomed")
	m := e.count(core.JobFilter{Queue: "kept"})
	if m[core.StateSucceeded]+m[core.StateFailed] != 100 {
		e.t.Fatalf("the other queue's jobs: %v, want 100 finished", m)
	}
}

func deleteWithCapabilities(e *env) {
	j := e.enqueueOne(req("q", "t"))
	c := e.claimOne("q")
	e.fail(core.Failure{Lease: c.Lease, Error: "x"})
	e.claimOne("q")
	e.deleteJob(j.ID, true)
	e.requireGone(j.ID, "a job with two runs")
	if e.h.Capabilities.Runs {
		_, err := e.runReader().GetRun(e.ctx, core.RunID(j.ID, 2))
		requireErr(e.t, err, core.ErrNotFound, "GetRun of a deleted job's second run")
		if m := e.countRuns(core.RunFilter{}); len(m) != 0 {
			e.t.Fatalf("CountRuns after the delete: %v", m)
		}
	}
	if e.h.Capabilities.Search {
		if m := e.countSearch(core.JobSearch{IDPrefix: j.ID[:10]}); len(m) != 0 {
			e.t.Fatalf("CountSearch after the delete: %v", m)
		}
	}
}

func deleteUndeclared(e *env) {
	j := e.enqueueOne(req("q", "t"))
	jd, ok := e.b.(core.JobDeleter)
	if !ok {
		return
	}
	e.requireUnsupported(jd.DeleteJob(e.ctx, j.ID, true), "DeleteJob")
	_, err := jd.DeleteQueue(e.ctx, core.DeleteQueueRequest{Queue: "q", Limit: 10})
	e.requireUnsupported(err, "DeleteQueue")
	e.get(j.ID)
}
