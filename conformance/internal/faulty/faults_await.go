package faulty

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// Faults of fan-in (core.Awaiter). Most wrap the backend's own Awaiter
// and break one rule around it; those that change what counts run the
// waits over proxy jobs (see proxied).

func init() {
	register(Fault{
		Name:     "await-all-as-any",
		What:     "an all-wait over several jobs wakes at the first that ends, not the last",
		CaughtBy: []string{"Await/AllComplete", "Await/AllFail", "Await/AllCancel", "Await/AllDeleteJob"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return allAsAny{base{b}} },
	})
	register(Fault{
		Name:     "await-fail-not-counted",
		What:     "a job that fails for good (Fail without retry, Rescue out of attempts) is never counted",
		CaughtBy: []string{"Await/AllFail", "Await/AllFailRetriedNot", "Await/AllRescueFail"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return newProxied(b, func(st core.JobState) bool { return st != core.StateFailed }, false)
		},
	})
	register(Fault{
		Name:     "await-cancel-not-counted",
		What:     "a cancelled job (Cancel, a deadline, a bulk cancel) is never counted",
		CaughtBy: []string{"Await/AllCancel", "Await/AllDeadline", "Await/AllBulkCancel"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return newProxied(b, func(st core.JobState) bool { return st != core.StateCancelled }, false)
		},
	})
	register(Fault{
		Name:     "await-retry-counts-twice",
		What:     "a counted job that Retry queues again counts a second time when it ends again",
		CaughtBy: []string{"Await/RetryNoUncount"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return newProxied(b, nil, true) },
	})
	register(Fault{
		Name:     "await-stale-wakes",
		What:     "a wait left behind by a later claim still wakes the job, in whatever sleep it is in by then",
		CaughtBy: []string{"Await/StaleNotWoken"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return staleWakes{base{b}} },
	})
	register(Fault{
		Name:     "await-ignores-cancel-children",
		What:     "CancelChildren is stored but a cancelled waiting job leaves its children running",
		CaughtBy: []string{"Await/CancelChildren", "Await/CancelChildrenByDeadline"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return &ignoresCancelChildren{base: base{b}} },
	})
	register(Fault{
		Name:     "await-stale-cancels-children",
		What:     "cancelling a job cancels the children of its latest wait even when a later claim left that wait behind",
		CaughtBy: []string{"Await/CancelChildrenStale"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return staleCancelsChildren{base{b}} },
	})
	register(Fault{
		Name:     "await-holds-claim",
		What:     "AwaitJobs reports the wait but leaves the job running under its lease, and stores nothing",
		CaughtBy: []string{"Await/ParksLikeSleep", "Await/AllComplete", "Await/WaitFields"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return holdsClaim{base{b}} },
	})
	register(Fault{
		Name:     "await-keeps-lease",
		What:     "the lease of a parked job still heartbeats",
		CaughtBy: []string{"Await/ParksLikeSleep"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return keepsLease{base{b}} },
	})
	register(Fault{
		Name:     "await-consumes-attempt",
		What:     "the claim that follows a wake counts a new attempt",
		CaughtBy: []string{"Await/ParksLikeSleep", "Await/AllComplete", "Await/Until"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return awaitConsumesAttempt{base{b}} },
	})
	register(Fault{
		Name:     "await-unknown-child-stored",
		What:     "AwaitJobs naming a job that does not exist drops the id and stores the wait anyway",
		CaughtBy: []string{"Await/UnknownChild"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return unknownChildStored{base{b}} },
	})
	register(Fault{
		Name:     "await-delete-keeps-wait",
		What:     "JobWait still reports the wait of a deleted job",
		CaughtBy: []string{"Await/DeleteWaiter", "Await/CleanupWaiter"},
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return &deleteKeepsWait{base: base{b}, seen: map[string]core.Wait{}}
		},
	})
}

// allAsAny runs every all-wait over several jobs as an any-wait, and
// reports it as it was asked for.
type allAsAny struct{ base }

func (a allAsAny) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	if req.Mode == core.AwaitAll && len(req.JobIDs) > 1 {
		req.Mode = core.AwaitAny
	}
	return a.base.AwaitJobs(ctx, req)
}

func (a allAsAny) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	w, err := a.base.JobWait(ctx, jobID)
	if err == nil && w.Mode == core.AwaitAny && len(w.JobIDs) > 1 {
		w.Mode = core.AwaitAll
	}
	return w, err
}

// pendingJobs returns the ids that name jobs not yet terminal.
func pendingJobs(ctx context.Context, b core.QueueBackend, ids []string) []string {
	var out []string
	for _, id := range ids {
		if j, err := b.GetJob(ctx, id); err == nil && !j.State.Terminal() {
			out = append(out, id)
		}
	}
	return out
}

// staleWakes turns the sleep of a job whose latest wait is stale into an
// any-wait on the jobs of that wait still pending: so their end wakes it.
type staleWakes struct{ base }

func (s staleWakes) Sleep(ctx context.Context, l core.Lease, until time.Time) error {
	w, err := s.base.JobWait(ctx, l.JobID)
	if err != nil || w.Token == l.Token || !until.Before(core.WaitForever) {
		return s.base.Sleep(ctx, l, until)
	}
	ids := pendingJobs(ctx, s.QueueBackend, w.JobIDs)
	if len(ids) == 0 {
		return s.base.Sleep(ctx, l, until)
	}
	_, err = s.base.AwaitJobs(ctx, core.AwaitRequest{Lease: l, JobIDs: ids, Mode: core.AwaitAny, Until: until})
	return err
}

// ignoresCancelChildren stores CancelChildren apart and never passes it
// on.
type ignoresCancelChildren struct {
	base
	mu   sync.Mutex
	asks map[string]bool
}

func (c *ignoresCancelChildren) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	asked := req.CancelChildren
	req.CancelChildren = false
	res, err := c.base.AwaitJobs(ctx, req)
	if err == nil {
		c.mu.Lock()
		if c.asks == nil {
			c.asks = map[string]bool{}
		}
		c.asks[req.Lease.JobID] = asked
		c.mu.Unlock()
	}
	return res, err
}

func (c *ignoresCancelChildren) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	w, err := c.base.JobWait(ctx, jobID)
	c.mu.Lock()
	w.CancelChildren = c.asks[jobID]
	c.mu.Unlock()
	return w, err
}

// staleCancelsChildren cancels the pending children of a cancelled job's
// latest wait whether or not it is current.
type staleCancelsChildren struct{ base }

func (s staleCancelsChildren) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	w, werr := s.base.JobWait(ctx, jobID)
	j, err := s.base.Cancel(ctx, jobID, reason)
	if err != nil || werr != nil || !w.CancelChildren {
		return j, err
	}
	for _, id := range pendingJobs(ctx, s.QueueBackend, w.JobIDs) {
		if _, err := s.base.Cancel(ctx, id, reason); err != nil {
			return j, err
		}
	}
	return j, nil
}

// holdsClaim checks the request, the lease and the awaited jobs, and
// reports the wait without beginning it.
type holdsClaim struct{ base }

func (h holdsClaim) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	if err := core.ValidateAwait(req); err != nil {
		return core.AwaitResult{}, err
	}
	if j, err := h.GetJob(ctx, req.Lease.JobID); err != nil || j.State != core.StateRunning || j.Lease.Token != req.Lease.Token {
		return core.AwaitResult{}, fmt.Errorf("%w: job %s", core.ErrLeaseLost, req.Lease.JobID)
	}
	res := core.AwaitResult{}
	for _, id := range req.JobIDs {
		j, err := h.GetJob(ctx, id)
		if err != nil {
			return core.AwaitResult{}, err
		}
		if !j.State.Terminal() {
			res.Pending++
		}
	}
	res.Woken = req.Mode.Satisfied(len(req.JobIDs), res.Pending)
	return res, nil
}

// keepsLease answers the heartbeat of a lease that began the job's
// current wait as if the job still ran under it.
type keepsLease struct{ base }

func (k keepsLease) Heartbeat(ctx context.Context, l core.Lease, ttl time.Duration) (core.Lease, error) {
	if w, err := k.base.JobWait(ctx, l.JobID); err == nil && w.Token == l.Token && ttl > 0 {
		if j, err := k.GetJob(ctx, l.JobID); err == nil && j.State == core.StateSleeping && j.Lease.Token == l.Token {
			l.ExpiresAt = time.Now().Add(ttl)
			return l, nil
		}
	}
	return k.base.Heartbeat(ctx, l, ttl)
}

// awaitConsumesAttempt reports one more attempt for a job claimed after
// a wait that it began in its previous run.
type awaitConsumesAttempt struct{ base }

func (a awaitConsumesAttempt) Claim(ctx context.Context, r core.ClaimRequest) ([]core.Job, error) {
	jobs, err := a.base.Claim(ctx, r)
	for i := range jobs {
		if w, werr := a.base.JobWait(ctx, jobs[i].ID); werr == nil && w.Token == jobs[i].Lease.Token-1 {
			jobs[i].Attempt++
		}
	}
	return jobs, err
}

// unknownChildStored drops the awaited ids that name no job.
type unknownChildStored struct{ base }

func (u unknownChildStored) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	var known []string
	for _, id := range req.JobIDs {
		if _, err := u.GetJob(ctx, id); !errors.Is(err, core.ErrNotFound) {
			known = append(known, id)
		}
	}
	if len(known) > 0 {
		req.JobIDs = known
	}
	return u.base.AwaitJobs(ctx, req)
}

// deleteKeepsWait answers JobWait of a deleted job with the last wait it
// reported for it.
type deleteKeepsWait struct {
	base
	mu   sync.Mutex
	seen map[string]core.Wait
}

func (d *deleteKeepsWait) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	w, err := d.base.JobWait(ctx, jobID)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		d.seen[jobID] = w
		return w, nil
	}
	if old, ok := d.seen[jobID]; ok && errors.Is(err, core.ErrNotFound) {
		return old, nil
	}
	return w, err
}

func (d *deleteKeepsWait) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	res, err := d.base.AwaitJobs(ctx, req)
	if err == nil {
		_, _ = d.JobWait(ctx, req.Lease.JobID) // remember it
	}
	return res, err
}

// proxyQueue holds the proxy jobs of proxied.
const proxyQueue = "await-proxy"

// proxied runs each wait on the wrapped backend's Awaiter over proxy
// jobs, one per awaited job, and cancels a proxy itself once, after a
// change, it sees its job end: so it decides what counts. counts, when
// set, says which terminal states count (a deleted job always does);
// twice makes a counted job that Retry queued again count once more, by
// cancelling another pending proxy of its waits.
type proxied struct {
	base
	counts func(core.JobState) bool
	twice  bool

	mu      sync.Mutex
	pending map[string][]string // awaited job → its uncounted proxies
	done    map[string][]string // awaited job → its counted proxies
	retried map[string]bool     // counted jobs queued again by Retry
	child   map[string]string   // proxy → awaited job
	waiter  map[string]string   // proxy → waiting job
	waits   map[string][]string // waiting job → the proxies of its wait
}

func newProxied(b core.QueueBackend, counts func(core.JobState) bool, twice bool) *proxied {
	return &proxied{
		base: base{b}, counts: counts, twice: twice,
		pending: map[string][]string{}, done: map[string][]string{}, retried: map[string]bool{},
		child: map[string]string{}, waiter: map[string]string{}, waits: map[string][]string{},
	}
}

// ended reports whether job id ended in a way that counts.
func (p *proxied) ended(ctx context.Context, id string) (bool, error) {
	j, err := p.QueueBackend.GetJob(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	}
	return j.State.Terminal() && (p.counts == nil || p.counts(j.State)), nil
}

// cancelProxy counts one proxy on the wrapped backend.
func (p *proxied) cancelProxy(ctx context.Context, proxy string) error {
	if _, err := p.QueueBackend.Cancel(ctx, proxy, "counted"); err != nil && !errors.Is(err, core.ErrNotFound) {
		return err
	}
	return nil
}

// sync counts the awaited jobs that ended since the last change.
func (p *proxied) sync(ctx context.Context) error {
	for id, proxies := range p.pending {
		ok, err := p.ended(ctx, id)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		for _, px := range proxies {
			if err := p.cancelProxy(ctx, px); err != nil {
				return err
			}
		}
		delete(p.pending, id)
		p.done[id] = append(p.done[id], proxies...)
	}
	for id := range p.retried {
		ok, err := p.ended(ctx, id)
		if err != nil || !ok {
			continue
		}
		delete(p.retried, id)
		for _, px := range p.done[id] {
			if err := p.countAnother(ctx, p.waiter[px], id); err != nil {
				return err
			}
		}
	}
	return nil
}

// countAnother counts one pending proxy of waiter's wait that is not
// id's.
func (p *proxied) countAnother(ctx context.Context, waiter, id string) error {
	for _, px := range p.waits[waiter] {
		c := p.child[px]
		if c == id || !slices.Contains(p.pending[c], px) {
			continue
		}
		p.pending[c] = slices.DeleteFunc(p.pending[c], func(s string) bool { return s == px })
		return p.cancelProxy(ctx, px)
	}
	return nil
}

// change runs op and then counts what it ended, under the lock.
func change[T any](ctx context.Context, p *proxied, op func() (T, error)) (T, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, err := op()
	if serr := p.sync(ctx); serr != nil && err == nil {
		err = serr
	}
	return v, err
}

func (p *proxied) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	if err := core.ValidateAwait(req); err != nil {
		return core.AwaitResult{}, err
	}
	return change(ctx, p, func() (core.AwaitResult, error) {
		for _, id := range req.JobIDs {
			if _, err := p.QueueBackend.GetJob(ctx, id); err != nil {
				return core.AwaitResult{}, err
			}
		}
		reqs := make([]core.EnqueueRequest, len(req.JobIDs))
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: proxyQueue, Task: "proxy"}
		}
		res, err := p.QueueBackend.Enqueue(ctx, reqs)
		if err != nil {
			return core.AwaitResult{}, err
		}
		proxies := make([]string, len(res))
		var counted []bool
		for i, r := range res {
			proxies[i] = r.Job.ID
			ok, err := p.ended(ctx, req.JobIDs[i])
			if err != nil {
				return core.AwaitResult{}, err
			}
			if ok {
				if err := p.cancelProxy(ctx, proxies[i]); err != nil {
					return core.AwaitResult{}, err
				}
			}
			counted = append(counted, ok)
		}
		preq := req
		preq.JobIDs = proxies
		ar, err := p.base.AwaitJobs(ctx, preq)
		if err != nil {
			return ar, err
		}
		waiter := req.Lease.JobID
		for _, px := range p.waits[waiter] {
			c := p.child[px]
			p.pending[c] = slices.DeleteFunc(p.pending[c], func(s string) bool { return s == px })
		}
		p.waits[waiter] = proxies
		for i, px := range proxies {
			c := req.JobIDs[i]
			p.child[px], p.waiter[px] = c, waiter
			if counted[i] {
				p.done[c] = append(p.done[c], px)
			} else {
				p.pending[c] = append(p.pending[c], px)
			}
		}
		return ar, nil
	})
}

func (p *proxied) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	w, err := p.base.JobWait(ctx, jobID)
	if err != nil {
		return w, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, px := range w.JobIDs {
		w.JobIDs[i] = p.child[px]
	}
	return w, nil
}

func (p *proxied) Claim(ctx context.Context, r core.ClaimRequest) ([]core.Job, error) {
	return change(ctx, p, func() ([]core.Job, error) { return p.QueueBackend.Claim(ctx, r) })
}

func (p *proxied) Heartbeat(ctx context.Context, l core.Lease, ttl time.Duration) (core.Lease, error) {
	return change(ctx, p, func() (core.Lease, error) { return p.QueueBackend.Heartbeat(ctx, l, ttl) })
}

func (p *proxied) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	errs, err := p.QueueBackend.Complete(ctx, items)
	if serr := p.sync(ctx); serr != nil && err == nil {
		err = serr
	}
	return errs, err
}

func (p *proxied) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	return change(ctx, p, func() (core.JobState, error) { return p.QueueBackend.Fail(ctx, f) })
}

func (p *proxied) Rescue(ctx context.Context, r core.RescueRequest) (core.RescueResult, error) {
	return change(ctx, p, func() (core.RescueResult, error) { return p.QueueBackend.Rescue(ctx, r) })
}

func (p *proxied) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	return change(ctx, p, func() (core.Job, error) {
		w, werr := p.base.JobWait(ctx, jobID)
		before, gerr := p.QueueBackend.GetJob(ctx, jobID)
		j, err := p.QueueBackend.Cancel(ctx, jobID, reason)
		if err != nil || werr != nil || gerr != nil || !w.CancelChildren ||
			before.State != core.StateSleeping || before.Lease.Token != w.Token {
			return j, err
		}
		for _, px := range w.JobIDs { // the wait's children, as the wrapped backend would
			c := p.child[px]
			if cj, err := p.QueueBackend.GetJob(ctx, c); err == nil && cj.State.Active() {
				if _, err := p.QueueBackend.Cancel(ctx, c, reason); err != nil {
					return j, err
				}
			}
		}
		return j, nil
	})
}

func (p *proxied) Retry(ctx context.Context, jobID string) (core.Job, error) {
	return change(ctx, p, func() (core.Job, error) {
		j, err := p.QueueBackend.Retry(ctx, jobID)
		if err == nil && p.twice && len(p.done[jobID]) > 0 {
			p.retried[jobID] = true
		}
		return j, err
	})
}

func (p *proxied) Cleanup(ctx context.Context, r core.CleanupRequest) (int, error) {
	return change(ctx, p, func() (int, error) { return p.QueueBackend.Cleanup(ctx, r) })
}

func (p *proxied) DeleteJob(ctx context.Context, jobID string, force bool) error {
	_, err := change(ctx, p, func() (struct{}, error) { return struct{}{}, p.base.DeleteJob(ctx, jobID, force) })
	return err
}

func (p *proxied) DeleteQueue(ctx context.Context, r core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	return change(ctx, p, func() (core.DeleteQueueResult, error) { return p.base.DeleteQueue(ctx, r) })
}
