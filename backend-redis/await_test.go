package redisq

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// awaitLayout is a layout the fan-in tests run on; cross says whether a
// wait may name jobs of other queues.
type awaitLayout struct {
	name   string
	opts   Options
	client func(t testing.TB) redis.UniversalClient
	cross  bool
}

func awaitLayouts() []awaitLayout {
	return []awaitLayout{
		{"standalone", Options{}, func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }, true},
		{"eval", Options{Scripts: ScriptsEval}, func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }, true},
		{"cluster-oneslot", Options{OneSlot: true}, func(t testing.TB) redis.UniversalClient { return clusterClient(t) }, true},
		{"cluster-slots", Options{}, func(t testing.TB) redis.UniversalClient { return clusterClient(t) }, false},
	}
}

func claimOne(t *testing.T, b *Backend, queue string) core.Job {
	t.Helper()
	js, err := b.Claim(context.Background(), core.ClaimRequest{Queue: queue, WorkerID: "w", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(js) != 1 {
		t.Fatalf("claim %s: %v %v", queue, len(js), err)
	}
	return js[0]
}

func enqueueIn(t *testing.T, b *Backend, queue string, n int) []string {
	t.Helper()
	return enqueueAt(t, b, queue, n, time.Time{})
}

func enqueueAt(t *testing.T, b *Backend, queue string, n int, at time.Time) []string {
	t.Helper()
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: queue, Task: "t", RunAt: at}
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

// TestAwaitStore checks the store side of fan-in on every layout: the
// wait, its counts from each kind of terminal transition, the wake, the
// cancellation of children and the removal of a waiting job.
func TestAwaitStore(t *testing.T) {
	ctx := context.Background()
	for _, l := range awaitLayouts() {
		t.Run(l.name, func(t *testing.T) {
			b := newBackend(t, l.client(t), l.opts)
			cq := "qc"
			if !l.cross {
				cq = "qp"
			}
			parent := enqueueIn(t, b, "qp", 1)[0]
			p := claimOne(t, b, "qp")
			kids := enqueueIn(t, b, cq, 4)
			unknown := append([]string{kids[0]}, "nope")
			if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: unknown, Mode: core.AwaitAll}); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("unknown child: %v", err)
			}
			stale := p.Lease
			stale.Token++
			if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: stale, JobIDs: kids, Mode: core.AwaitAll}); !errors.Is(err, core.ErrLeaseLost) {
				t.Fatalf("stale lease: %v", err)
			}
			res, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: kids, Mode: core.AwaitAll, CancelChildren: true})
			if err != nil || res.Pending != 4 || res.Woken {
				t.Fatalf("await: %+v %v", res, err)
			}
			j, _ := b.GetJob(ctx, parent)
			if j.State != core.StateSleeping || !j.RunAt.Equal(core.WaitForever) {
				t.Fatalf("parked parent: %s %v", j.State, j.RunAt)
			}
			// complete, fail, cancel and delete count one each
			c1 := claimOne(t, b, cq)
			if errs, err := b.Complete(ctx, []core.Completion{{Lease: c1.Lease}}); err != nil || errs[0] != nil {
				t.Fatal(err, errs)
			}
			c2 := claimOne(t, b, cq)
			if _, err := b.Fail(ctx, core.Failure{Lease: c2.Lease, Error: "x", Terminal: true}); err != nil {
				t.Fatal(err)
			}
			w, err := b.JobWait(ctx, parent)
			if err != nil || w.Pending != 2 || w.Woken || w.Token != p.Lease.Token || len(w.JobIDs) != 4 || w.JobIDs[3] != kids[3] {
				t.Fatalf("wait: %+v %v", w, err)
			}
			c3 := claimOne(t, b, cq)
			if _, err := b.Cancel(ctx, c3.ID, ""); err != nil {
				t.Fatal(err)
			}
			// a retried child counted once counts no more
			if _, err := b.Retry(ctx, c2.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Cancel(ctx, c2.ID, ""); err != nil {
				t.Fatal(err)
			}
			w, _ = b.JobWait(ctx, parent)
			if w.Pending != 1 || w.Woken {
				t.Fatalf("wait after three: %+v", w)
			}
			var last string
			for _, id := range kids {
				if id != c1.ID && id != c2.ID && id != c3.ID {
					last = id
				}
			}
			if err := b.DeleteJob(ctx, last, false); err != nil {
				t.Fatal(err)
			}
			w, _ = b.JobWait(ctx, parent)
			if w.Pending != 0 || !w.Woken {
				t.Fatalf("wait after all: %+v", w)
			}
			p2 := claimOne(t, b, "qp")
			if p2.ID != parent || p2.Attempt != p.Attempt {
				t.Fatalf("woken parent claimed as %+v", p2)
			}

			// any: satisfied at once by a terminal child; a new wait
			// replaces the old one
			// (not due, so that the parent is the next job of its queue)
			more := enqueueAt(t, b, cq, 2, time.Now().Add(time.Hour))
			res, err = b.AwaitJobs(ctx, core.AwaitRequest{Lease: p2.Lease, JobIDs: append([]string{c1.ID}, more...), Mode: core.AwaitAny})
			if err != nil || res.Pending != 2 || !res.Woken {
				t.Fatalf("await any: %+v %v", res, err)
			}
			p3 := claimOne(t, b, "qp")
			if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: p3.Lease, JobIDs: more, Mode: core.AwaitAll, CancelChildren: true}); err != nil {
				t.Fatal(err)
			}
			// cancelling the parent cancels its children
			if _, err := b.Cancel(ctx, parent, "stop"); err != nil {
				t.Fatal(err)
			}
			for _, id := range more {
				j, _ := b.GetJob(ctx, id)
				if j.State != core.StateCancelled {
					t.Fatalf("child %s after the parent's cancel: %s", id, j.State)
				}
			}
			w, _ = b.JobWait(ctx, parent)
			if w.Pending != 0 || w.Woken {
				t.Fatalf("cancelled wait: %+v", w)
			}
			// a deleted waiting job leaves no wait and no edge behind
			other := enqueueIn(t, b, "qp", 1)[0]
			o := claimOne(t, b, "qp")
			kid := enqueueAt(t, b, cq, 1, time.Now().Add(time.Hour))[0]
			if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: o.Lease, JobIDs: []string{kid}, Mode: core.AwaitAll}); err != nil {
				t.Fatal(err)
			}
			if n, _ := b.rdb.HLen(ctx, b.ks.queueKeys(cq)[kEdge]).Result(); n != 1 {
				t.Fatalf("edges: %d", n)
			}
			if err := b.DeleteJob(ctx, other, false); err != nil {
				t.Fatal(err)
			}
			if _, err := b.JobWait(ctx, other); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("wait of a deleted job: %v", err)
			}
			if n, _ := b.rdb.Exists(ctx, b.ks.queueKeys(cq)[kEdge]).Result(); n != 0 {
				t.Fatal("edges left behind")
			}
		})
	}
}

// TestAwaitAcrossSlotsRefused checks that a cluster with a slot per queue
// refuses a wait on another queue's job and keeps the claim.
func TestAwaitAcrossSlotsRefused(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, clusterClient(t), Options{})
	enqueueIn(t, b, "qa", 1)
	p := claimOne(t, b, "qa")
	kid := enqueueIn(t, b, "qb", 1)
	if _, err := b.AwaitJobs(ctx, core.AwaitRequest{Lease: p.Lease, JobIDs: kid, Mode: core.AwaitAll}); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("await across slots: %v", err)
	}
	if errs, err := b.Complete(ctx, []core.Completion{{Lease: p.Lease}}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
}

// TestKQNamesEveryKey checks that the scripts' list of queue keys (KQN in
// luaLib, which kq builds another queue's keys from) names every key of
// keyNames but the flow keys that span queues.
func TestKQNamesEveryKey(t *testing.T) {
	i := strings.Index(luaLib, "local KQN = {")
	j := strings.Index(luaLib[i:], "}")
	got := regexp.MustCompile(`'([a-z]+)'`).FindAllStringSubmatch(luaLib[i:i+j], -1)
	var names []string
	for _, m := range got {
		names = append(names, m[1])
	}
	var want []string
	for _, n := range keyNames {
		if !nsKeys[n] {
			want = append(want, n)
		}
	}
	if !slices.Equal(names, want) {
		t.Fatalf("KQN = %v, want %v", names, want)
	}
}
