package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/core"
)

// opsTarget is a store the operations commands run against: every
// invocation of the command gets the same open backend, which the test
// also uses directly to seed jobs and check the outcome.
type opsTarget struct {
	name string
	be   core.QueueBackend
}

func (o opsTarget) run(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, Env{
		Stdout: &out, Stderr: &errb,
		openStore: func(context.Context) (*store.Store, error) {
			return &store.Store{Backend: o.be, Kind: o.name}, nil
		},
	})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func (o opsTarget) must(t *testing.T, want int, args ...string) result {
	t.Helper()
	r := o.run(t, args...)
	if r.code != want {
		t.Fatalf("%s: boson %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", o.name, strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// supportsOps reports whether b offers every operations capability.
func supportsOps(b core.QueueBackend) bool {
	_, rr := b.(core.RunReader)
	_, js := b.(core.JobSearcher)
	_, tl := b.(core.TaskLister)
	_, jd := b.(core.JobDeleter)
	return rr && js && tl && jd
}

// opsTargets returns backend-mem and every durable store of the tests
// that offers the operations capabilities; each store that lacks them is
// checked to answer every operations command with exit 6 instead.
func opsTargets(t *testing.T) []opsTarget {
	t.Helper()
	m := mem.New(mem.Options{})
	t.Cleanup(func() { _ = m.Close() })
	out := []opsTarget{{name: "mem", be: m}}
	for kind, url := range durableStores(t) {
		st, err := store.Open(context.Background(), url, store.Options{})
		if err != nil {
			t.Fatalf("open %s: %v", kind, err)
		}
		t.Cleanup(func() { _ = st.Close() })
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		tg := opsTarget{name: kind, be: st.Backend}
		if !supportsOps(st.Backend) {
			checkUnsupported(t, tg)
			continue
		}
		out = append(out, tg)
	}
	return out
}

// hidden hides a backend's optional capabilities, as an adapter written
// against the base contract would.
type hidden struct{ core.QueueBackend }

// checkUnsupported checks that every operations command exits 6 with a
// message naming what the store lacks.
func checkUnsupported(t *testing.T, o opsTarget) {
	t.Helper()
	for _, args := range [][]string{
		{"delete", "01JUNKJUNKJUNKJUNKJUNKJUNK"},
		{"delete-queue", "q", "--yes"},
		{"bulk", "retry", "--queue", "q"},
		{"bulk", "cancel", "--queue", "q", "--dry-run"},
		{"runs"},
		{"runs", "count"},
		{"runs", "get", "01JUNKJUNKJUNKJUNKJUNKJUNK.1"},
		{"tasks"},
		{"jobs", "--header", "k=v"},
		{"jobs", "--created-from", "1h"},
	} {
		r := o.must(t, ExitUnsupported, args...)
		if !strings.Contains(r.stderr, "unsupported") || !strings.Contains(r.stderr, "does not offer") {
			t.Errorf("%s: boson %s: stderr %q", o.name, strings.Join(args, " "), r.stderr)
		}
	}
}

func TestOpsUnsupported(t *testing.T) {
	m := mem.New(mem.Options{})
	t.Cleanup(func() { _ = m.Close() })
	checkUnsupported(t, opsTarget{name: "base", be: hidden{m}})
}

// seedJobs enqueues n jobs of task in queue with header tenant=<tenant>
// and returns their ids in order.
func seedJobs(t *testing.T, b core.QueueBackend, queue, task, tenant string, n int) []string {
	t.Helper()
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: queue, Task: task, Payload: []byte(fmt.Sprint(i)), Headers: map[string]string{"tenant": tenant}}
	}
	res, err := b.Enqueue(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

// claimAll claims up to n jobs of queue.
func claimAll(t *testing.T, b core.QueueBackend, queue string, n int) []core.Job {
	t.Helper()
	js, err := b.Claim(context.Background(), core.ClaimRequest{Queue: queue, WorkerID: "w-test", Limit: n, LeaseTTL: time.Minute})
	if err != nil || len(js) != n {
		t.Fatalf("claim %d of %s: %d, %v", n, queue, len(js), err)
	}
	return js
}

// failAll claims n jobs of queue and fails them for good with msg.
func failAll(t *testing.T, b core.QueueBackend, queue string, n int, msg string) []string {
	t.Helper()
	var ids []string
	for _, j := range claimAll(t, b, queue, n) {
		if _, err := b.Fail(context.Background(), core.Failure{Lease: j.Lease, Error: msg, Terminal: true}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	return ids
}

func counts(t *testing.T, b core.QueueBackend, queue string) map[core.JobState]int64 {
	t.Helper()
	c, err := b.CountJobs(context.Background(), core.JobFilter{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDeleteCommand(t *testing.T) {
	for _, o := range opsTargets(t) {
		t.Run(o.name, func(t *testing.T) {
			ids := seedJobs(t, o.be, "del", "mail", "a", 4)
			running := claimAll(t, o.be, "del", 1)[0]
			r := o.must(t, ExitOK, "delete", ids[1], ids[2])
			if !strings.Contains(r.stdout, "deleted "+ids[1]) || !strings.Contains(r.stdout, "deleted "+ids[2]) {
				t.Fatalf("delete printed %q", r.stdout)
			}
			for _, id := range ids[1:3] {
				if _, err := o.be.GetJob(context.Background(), id); !errorsIsNotFound(err) {
					t.Fatalf("deleted job %s: %v", id, err)
				}
			}
			o.must(t, ExitNotFound, "delete", ids[1])
			r = o.must(t, ExitRefused, "delete", running.ID)
			if !strings.Contains(r.stderr, running.ID) {
				t.Fatalf("refused delete: %q", r.stderr)
			}
			if j, err := o.be.GetJob(context.Background(), running.ID); err != nil || j.State != core.StateRunning {
				t.Fatalf("refused delete changed the job: %+v %v", j, err)
			}
			r = o.must(t, ExitOK, "delete", "--force", running.ID, "--json")
			if outs := decode[[]jobOutcome](t, r); len(outs) != 1 || outs[0].Error != "" || outs[0].ID != running.ID {
				t.Fatalf("delete --force --json: %+v", outs)
			}
			if _, err := o.be.Heartbeat(context.Background(), running.Lease, time.Minute); err == nil {
				t.Fatal("the deleted job's lease still heartbeats")
			}
			if c := counts(t, o.be, "del"); c[core.StateQueued] != 1 || len(nonZero(c)) != 1 {
				t.Fatalf("counts after deletes: %v", c)
			}
		})
	}
}

func errorsIsNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "not found")
}

func nonZero(c map[core.JobState]int64) map[core.JobState]int64 {
	out := map[core.JobState]int64{}
	for k, v := range c {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func TestDeleteQueueCommand(t *testing.T) {
	for _, o := range opsTargets(t) {
		t.Run(o.name, func(t *testing.T) {
			seedJobs(t, o.be, "doomed", "mail", "a", 7)
			kept := seedJobs(t, o.be, "kept", "mail", "a", 2)
			claimAll(t, o.be, "doomed", 2)
			failAll(t, o.be, "doomed", 1, "boom")
			o.must(t, ExitOK, "pause", "doomed")
			r := o.must(t, ExitUsage, "delete-queue", "doomed")
			if !strings.Contains(r.stderr, "7 jobs") || !strings.Contains(r.stderr, "--yes") {
				t.Fatalf("delete-queue without --yes: %q", r.stderr)
			}
			if c := counts(t, o.be, "doomed"); c[core.StateQueued] != 4 {
				t.Fatalf("delete-queue without --yes changed counts: %v", c)
			}
			o.must(t, ExitUsage, "delete-queue", "bad queue", "--yes")
			r = o.must(t, ExitOK, "delete-queue", "doomed", "--yes", "--batch", "3", "--json")
			out := decode[deleteQueueOut](t, r)
			if out.Deleted != 7 || !out.Done {
				t.Fatalf("delete-queue --json: %+v", out)
			}
			if !strings.Contains(r.stderr, "7 of about 7 jobs deleted") {
				t.Fatalf("progress: %q", r.stderr)
			}
			if c := nonZero(counts(t, o.be, "doomed")); len(c) != 0 {
				t.Fatalf("jobs left in the deleted queue: %v", c)
			}
			cfg, err := o.be.GetQueueConfig(context.Background(), "doomed")
			if err != nil || cfg.Paused {
				t.Fatalf("the deleted queue's config survived: %+v %v", cfg, err)
			}
			for _, id := range kept {
				if _, err := o.be.GetJob(context.Background(), id); err != nil {
					t.Fatalf("a job of another queue went: %v", err)
				}
			}
			r = o.must(t, ExitOK, "delete-queue", "doomed", "--yes")
			if !strings.Contains(r.stdout, "deleted queue doomed (0 jobs)") {
				t.Fatalf("deleting an empty queue: %q", r.stdout)
			}
		})
	}
}

func TestBulkCommand(t *testing.T) {
	for _, o := range opsTargets(t) {
		t.Run(o.name, func(t *testing.T) { bulkCommand(t, o) })
	}
}

func bulkCommand(t *testing.T, o opsTarget) {
	acme := seedJobs(t, o.be, "bulk", "mail", "acme", 30)
	seedJobs(t, o.be, "bulk", "mail", "other", 10)
	seedJobs(t, o.be, "bystander", "mail", "acme", 5)
	failed := failAll(t, o.be, "bulk", 12, "smtp down") // the first 12 acme jobs

	// Refusals change nothing.
	for _, args := range [][]string{
		{"bulk", "retry"},
		{"bulk", "retry", "--state", ""},
		{"bulk", "explode", "--queue", "bulk"},
		{"bulk", "retry", "--queue", "bulk", "--force"},
		{"bulk", "retry", "--queue", "bulk", "--created-from", "2026-01-02T00:00:00Z", "--created-to", "2026-01-01T00:00:00Z"},
		{"bulk", "retry", "--queue", "bulk", "--created-from", "yesterday"},
		{"bulk", "retry", "--queue", "bulk", "--batch", "0"},
		{"bulk", "retry", "--queue", "bulk", "--ids", strings.Repeat("x,", core.MaxPageSize+1)},
		{"bulk", "retry", "--header", "=v"},
	} {
		r := o.must(t, ExitUsage, args...)
		if r.stderr == "" {
			t.Errorf("boson %s: nothing on stderr", strings.Join(args, " "))
		}
	}
	r := o.must(t, ExitUsage, "bulk", "delete")
	if !strings.Contains(r.stderr, "--all") {
		t.Fatalf("match-everything refusal: %q", r.stderr)
	}
	if c := counts(t, o.be, "bulk"); c[core.StateFailed] != 12 || c[core.StateQueued] != 28 {
		t.Fatalf("counts after refusals: %v", c)
	}

	// A dry run counts only what the action applies to.
	r = o.must(t, ExitOK, "bulk", "retry", "--queue", "bulk", "--dry-run", "--json")
	if out := decode[bulkOut](t, r); out.Matched != 12 || out.Changed != 0 || !out.DryRun || !out.Done {
		t.Fatalf("retry dry run: %+v", out)
	}
	r = o.must(t, ExitOK, "bulk", "cancel", "--header", "tenant=acme", "--dry-run")
	if !strings.Contains(r.stdout, "would cancel 23 jobs") { // 18 queued acme in bulk + 5 in bystander
		t.Fatalf("cancel dry run: %q", r.stdout)
	}
	r = o.must(t, ExitOK, "bulk", "retry", "--queue", "bulk", "--state", "queued", "--dry-run", "--json")
	if out := decode[bulkOut](t, r); out.Matched != 0 {
		t.Fatalf("retry of queued jobs counts %d", out.Matched)
	}

	// An explicit timeout stops it before it is done, with a message.
	r = o.must(t, ExitError, "bulk", "retry", "--queue", "bulk", "--timeout", "1ns")
	if !strings.Contains(r.stderr, "deadline exceeded") {
		t.Fatalf("bulk --timeout 1ns: %q", r.stderr)
	}

	// Retry in small batches, with progress.
	r = o.must(t, ExitOK, "bulk", "retry", "--queue", "bulk", "--state", "failed", "--batch", "5", "--json")
	out := decode[bulkOut](t, r)
	if out.Matched != 12 || out.Changed != 12 || out.Skipped != 0 || !out.Done || out.Cursor != "" {
		t.Fatalf("bulk retry: %+v", out)
	}
	if !strings.Contains(r.stderr, "bulk retry: 12 of about 12 visited, 12 changed, 0 skipped, 0 failed\n") || strings.ContainsAny(r.stderr, "\r\x1b") {
		t.Fatalf("progress off a terminal: %q", r.stderr)
	}
	for _, id := range failed {
		if j, err := o.be.GetJob(context.Background(), id); err != nil || j.State != core.StateQueued {
			t.Fatalf("retried job %s: %+v %v", id, j.State, err)
		}
	}

	// Cancel by header within one queue, resuming from a cursor.
	r = o.must(t, ExitOK, "bulk", "cancel", "--queue", "bulk", "--header", "tenant=acme", "--cursor", acme[9], "--reason", "tenant gone", "--no-progress")
	if !strings.Contains(r.stdout, "cancel: 20 changed, 0 skipped, 0 failed of 20 matched") || r.stderr != "" {
		t.Fatalf("bulk cancel from a cursor: %q %q", r.stdout, r.stderr)
	}
	if j, _ := o.be.GetJob(context.Background(), acme[9]); j.State != core.StateQueued {
		t.Fatalf("the cursor's own job was cancelled: %s", j.State)
	}
	if j, _ := o.be.GetJob(context.Background(), acme[10]); j.State != core.StateCancelled || j.LastError != "tenant gone" {
		t.Fatalf("job after the cursor: %s %q", j.State, j.LastError)
	}
	if c := counts(t, o.be, "bystander"); c[core.StateQueued] != 5 {
		t.Fatalf("bystander queue: %v", c)
	}

	// Delete by id list and by id prefix.
	// --progress draws the bar off a terminal too; stdout stays JSON.
	r = o.must(t, ExitOK, "bulk", "delete", "--ids", acme[0]+","+acme[1], "--ids", acme[2], "--json", "--progress")
	if out := decode[bulkOut](t, r); out.Changed != 3 {
		t.Fatalf("delete by ids: %+v", out)
	}
	if !strings.HasPrefix(r.stderr, "\r\x1b[K") || !strings.Contains(r.stderr, "bulk delete ["+strings.Repeat("=", bulkBarWidth)+"] 100% 3/3, 3 changed, 0 skipped, 0 failed, ") || !strings.HasSuffix(r.stderr, " jobs/s\n") {
		t.Fatalf("progress bar: %q", r.stderr)
	}
	r = o.must(t, ExitOK, "bulk", "delete", "--id-prefix", acme[3], "--json")
	if out := decode[bulkOut](t, r); out.Changed != 1 {
		t.Fatalf("delete by id prefix: %+v", out)
	}
	if c := counts(t, o.be, "bulk"); c[core.StateQueued]+c[core.StateCancelled] != 36 {
		t.Fatalf("counts after deletes: %v", c)
	}

	// --all deletes everything that is not running.
	claimAll(t, o.be, "bystander", 1)
	r = o.must(t, ExitOK, "bulk", "delete", "--all", "--json")
	if out := decode[bulkOut](t, r); out.Changed != 36+4 {
		t.Fatalf("delete --all: %+v", out)
	}
	if c := nonZero(counts(t, o.be, "bystander")); len(c) != 1 || c[core.StateRunning] != 1 {
		t.Fatalf("a running job was deleted without --force: %v", c)
	}
	r = o.must(t, ExitOK, "bulk", "delete", "--all", "--force", "--json")
	if out := decode[bulkOut](t, r); out.Changed != 1 {
		t.Fatalf("delete --all --force: %+v", out)
	}
}

func TestRunsAndTasksCommands(t *testing.T) {
	for _, o := range opsTargets(t) {
		t.Run(o.name, func(t *testing.T) {
			ctx := context.Background()
			before := time.Now().Add(-time.Second)
			seedJobs(t, o.be, "r", "resize", "a", 3)
			seedJobs(t, o.be, "r2", "encode", "a", 1)
			if err := o.be.PutTaskConfig(ctx, core.TaskConfig{Task: "idle", MaxInFlight: 1}); err != nil {
				t.Fatal(err)
			}
			failAll(t, o.be, "r", 1, "no such image")
			ok := claimAll(t, o.be, "r", 1)[0]
			if errs, err := o.be.Complete(ctx, []core.Completion{{Lease: ok.Lease}}); err != nil || errs[0] != nil {
				t.Fatal(err, errs)
			}
			running := claimAll(t, o.be, "r2", 1)[0]

			r := o.must(t, ExitOK, "runs", "--json")
			page := decode[runsPage](t, r)
			if len(page.Runs) != 3 || page.Next != "" {
				t.Fatalf("runs: %+v", page)
			}
			for _, run := range page.Runs {
				if run.Queue == "" || run.Task == "" || run.WorkerID != "w-test" {
					t.Fatalf("run without queue, task or worker: %+v", run)
				}
			}
			r = o.must(t, ExitOK, "runs", "list", "--queue", "r", "--status", "failed", "--json")
			if page := decode[runsPage](t, r); len(page.Runs) != 1 || page.Runs[0].Error != "no such image" {
				t.Fatalf("failed runs of r: %+v", page)
			}
			r = o.must(t, ExitOK, "runs", "--limit", "2")
			if !strings.Contains(r.stdout, "next: ") || !strings.Contains(r.stdout, "WORKER") {
				t.Fatalf("runs table:\n%s", r.stdout)
			}
			r = o.must(t, ExitOK, "runs", "--limit", "1", "--all", "--desc", "--json")
			if page := decode[runsPage](t, r); len(page.Runs) != 3 || page.Runs[0].JobID != running.ID {
				t.Fatalf("runs --all --desc: %+v", page)
			}
			r = o.must(t, ExitOK, "runs", "count", "--since", before.UTC().Format(time.RFC3339Nano), "--json")
			if c := decode[runCounts](t, r); c.Total != 3 || c.Statuses[core.RunRunning] != 1 || c.Statuses[core.RunSucceeded] != 1 {
				t.Fatalf("runs count --since: %+v", c)
			}
			r = o.must(t, ExitOK, "runs", "count", "--before", before.UTC().Format(time.RFC3339Nano), "--json")
			if c := decode[runCounts](t, r); c.Total != 0 {
				t.Fatalf("runs count --before the start: %+v", c)
			}
			r = o.must(t, ExitOK, "runs", "count", "--task", "encode")
			if !strings.Contains(r.stdout, "running") || !strings.HasSuffix(strings.Join(strings.Fields(r.stdout), " "), "running 1 total 1") {
				t.Fatalf("runs count table:\n%s", r.stdout)
			}
			runID := core.RunID(running.ID, running.Lease.Token)
			r = o.must(t, ExitOK, "runs", "get", runID, "--json")
			if got := decode[core.Run](t, r); got.ID != runID || got.Status != core.RunRunning || got.Task != "encode" {
				t.Fatalf("runs get: %+v", got)
			}
			o.must(t, ExitNotFound, "runs", "get", running.ID+".99")
			o.must(t, ExitUsage, "runs", "get", "no-token")
			o.must(t, ExitUsage, "runs", "--status", "exploded")
			o.must(t, ExitUsage, "runs", "--since", "1h", "--before", "2h")
			o.must(t, ExitUsage, "runs", "frob")

			r = o.must(t, ExitOK, "tasks", "--json")
			ts := decode[struct{ Tasks []core.TaskInfo }](t, r)
			if len(ts.Tasks) != 3 || ts.Tasks[0].Name != "encode" || ts.Tasks[1].Name != "idle" || !ts.Tasks[1].HasConfig ||
				ts.Tasks[2].Counts[core.StateQueued] != 1 || ts.Tasks[2].Counts[core.StateFailed] != 1 {
				t.Fatalf("tasks: %+v", ts)
			}
			r = o.must(t, ExitOK, "tasks")
			if !strings.Contains(r.stdout, "resize") || !strings.Contains(r.stdout, "SUCCEEDED") {
				t.Fatalf("tasks table:\n%s", r.stdout)
			}
		})
	}
}

func TestJobsSearchFlags(t *testing.T) {
	for _, o := range opsTargets(t) {
		t.Run(o.name, func(t *testing.T) {
			a := seedJobs(t, o.be, "s", "mail", "acme", 3)
			seedJobs(t, o.be, "s", "mail", "other", 2)
			failAll(t, o.be, "s", 1, "x")
			r := o.must(t, ExitOK, "jobs", "--header", "tenant=acme", "--json")
			if p := decode[jobsPage](t, r); len(p.Jobs) != 3 || p.Jobs[0].ID != a[0] {
				t.Fatalf("--header tenant=acme: %d jobs", len(p.Jobs))
			}
			r = o.must(t, ExitOK, "jobs", "--header", "tenant", "--queue", "s", "--limit", "2", "--all", "--json")
			if p := decode[jobsPage](t, r); len(p.Jobs) != 5 {
				t.Fatalf("--header tenant --all: %d jobs", len(p.Jobs))
			}
			r = o.must(t, ExitOK, "jobs", "--id-prefix", a[1], "--json")
			if p := decode[jobsPage](t, r); len(p.Jobs) != 1 || p.Jobs[0].ID != a[1] {
				t.Fatalf("--id-prefix: %+v", p.Jobs)
			}
			r = o.must(t, ExitOK, "jobs", "--ids", a[0]+","+a[2], "--json")
			if p := decode[jobsPage](t, r); len(p.Jobs) != 2 {
				t.Fatalf("--ids: %d jobs", len(p.Jobs))
			}
			r = o.must(t, ExitOK, "jobs", "--created-from", "1h", "--finished-from", "1h", "--json")
			if p := decode[jobsPage](t, r); len(p.Jobs) != 1 || p.Jobs[0].ID != a[0] {
				t.Fatalf("--finished-from: %+v", p.Jobs)
			}
			r = o.must(t, ExitOK, "jobs", "--created-to", "2000-01-01", "--json")
			if p := decode[jobsPage](t, r); len(p.Jobs) != 0 {
				t.Fatalf("--created-to 2000: %d jobs", len(p.Jobs))
			}
			o.must(t, ExitUsage, "jobs", "--finished-from", "soon")
			o.must(t, ExitUsage, "jobs", "--created-from", "1h", "--created-to", "2h")
		})
	}
}
