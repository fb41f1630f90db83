package boson

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
)

// errShutdown is the cause given to attempts cancelled when the shutdown
// grace period ends.
var errShutdown = errors.New("boson: worker shut down before the attempt finished")

// Worker claims jobs of its queues and runs their handlers. It holds at
// most as many attempts as it has slots (Concurrency, or the adaptive
// size up to MaxConcurrency), claims only free capacity, renews the
// leases of running attempts, rescues expired leases and applies retention.
// Create one with [NewWorker], register handlers, then [Worker.Start] (or
// [Worker.Run]) and finally [Worker.Shutdown].
type Worker struct {
	router   *core.Router
	opts     WorkerOptions
	clock    core.Clock
	log      *slog.Logger
	handlers map[string]*registration
	counters map[string]*counterSet
	queues   []queueSource
	chain    ExecuteFunc

	mu       sync.Mutex
	started  bool
	stopping bool
	stopped  chan struct{} // closed when Shutdown has finished

	stopClaim  chan struct{} // closed when Shutdown begins
	claimDone  chan struct{} // closed when the claim loop has returned
	stopWatch  chan struct{} // closed when every attempt has finished
	baseCtx    context.Context
	hardCancel context.CancelCauseFunc // cancels running attempts
	slotFreed  chan struct{}
	limit      atomic.Int64 // slots: handlers that may run at once
	adapt      *adapter     // sizes the slots; nil when Concurrency fixes them
	inflight   atomic.Int64 // attempts whose handler runs
	// longRunning counts the handlers of an adaptive worker that have
	// run longer than adaptLong; up to as many as there are slots do
	// not hold one.
	longRunning atomic.Int64
	owned       atomic.Int64 // claimed jobs not yet finalized (running or writing their outcome)
	runs        sync.WaitGroup
	loops       sync.WaitGroup
	completer   *completer
	watch       *watcher
	jobs        chan claimedJob // claimed jobs handed to idle runners
	idle        atomic.Int64    // runners waiting on jobs and not yet handed one
}

// claimedJob is one claimed job on its way to a runner.
type claimedJob struct {
	q   queueSource
	c   *counterSet
	job core.Job
	// sent is when the claim was sent, on the worker's clock: the store
	// dated the lease no earlier, so the first renewal is due an interval
	// after it, however long the job took to reach a runner.
	sent time.Time
	// seq is the queue's signal count before the claim was sent (see
	// watcher.add).
	seq uint64
}

type queueSource struct {
	name string
	b    core.QueueBackend
}

// NewWorker returns a worker over one backend.
func NewWorker(b core.QueueBackend, opts WorkerOptions) (*Worker, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: backend must not be nil", core.ErrInvalidArgument)
	}
	return NewRouterWorker(core.NewRouter(b), opts)
}

// NewRouterWorker returns a worker that serves each of its queues from the
// backend r resolves for it.
func NewRouterWorker(r *core.Router, opts WorkerOptions) (*Worker, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: router must not be nil", core.ErrInvalidArgument)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{
		router:   r,
		opts:     o,
		clock:    o.Clock,
		log:      o.Logger.With("worker_id", o.ID),
		handlers: map[string]*registration{},
		counters: map[string]*counterSet{},
		stopped:  make(chan struct{}),
	}
	for _, q := range o.Queues {
		b, err := r.Resolve(q)
		if err != nil {
			return nil, fmt.Errorf("boson: queue %s: %w", q, err)
		}
		w.queues = append(w.queues, queueSource{name: q, b: b})
		w.counters[q] = &counterSet{}
	}
	return w, nil
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.opts.ID }

// Start begins claiming and returns at once. ctx supplies values to every
// attempt's context; cancelling it does not stop the worker (call
// [Worker.Shutdown]). Starting twice is an error wrapping
// [core.ErrInvalidState].
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return fmt.Errorf("%w: worker already started", core.ErrInvalidState)
	}
	if err := w.storeFlowLimits(ctx); err != nil {
		return err
	}
	w.started = true
	w.stopClaim = make(chan struct{})
	w.stopWatch = make(chan struct{})
	w.slotFreed = make(chan struct{}, 1)
	w.baseCtx, w.hardCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	w.chain = w.dispatchExec
	for i := len(w.opts.Middleware) - 1; i >= 0; i-- {
		if mw := w.opts.Middleware[i]; mw != nil {
			w.chain = mw(w.chain)
		}
	}
	// At most twice the slots' ceiling are owned at once, so submitting
	// a completion never waits for room.
	w.completer = newCompleter(w.opts.CompletionBatch, 2*w.opts.MaxConcurrency)
	w.loops.Add(1)
	go func() {
		defer w.loops.Done()
		w.completer.loop()
	}()
	w.watch = newWatcher(w)
	wake, unsubscribe := w.subscribe()
	w.loops.Add(2)
	go func() {
		defer w.loops.Done()
		w.watch.loop(w.baseCtx, w.stopWatch)
	}()
	go func() {
		defer w.loops.Done()
		w.watch.renewLoop(w.stopWatch)
	}()
	w.jobs = make(chan claimedJob, w.opts.MaxConcurrency)
	w.limit.Store(int64(w.opts.startSlots()))
	if w.opts.adaptive() {
		w.adapt = newAdapter(w, w.opts.startSlots(), w.opts.MaxConcurrency)
	}
	w.claimDone = make(chan struct{})
	go w.claimLoop(wake, unsubscribe)
	if w.opts.RescueInterval > 0 {
		w.loops.Add(1)
		go w.every(w.opts.RescueInterval, func() { _, _ = w.Rescue(w.baseCtx) })
	}
	if w.opts.RetentionInterval > 0 {
		w.loops.Add(1)
		go w.every(w.opts.RetentionInterval, func() { _, _ = w.Cleanup(w.baseCtx) })
	}
	w.log.Info("boson: worker started", "queues", w.opts.Queues, "slots", w.opts.startSlots(), "adaptive", w.opts.adaptive(), "max_slots", w.opts.MaxConcurrency)
	return nil
}

// Run starts the worker, blocks until ctx is cancelled, then shuts it down
// gracefully (see [Worker.Shutdown]) and returns.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return w.Shutdown(context.Background())
}

// Shutdown stops claiming, lets running attempts finish for up to the
// shutdown grace period (or until ctx ends, if sooner), then cancels the
// rest and waits for their handlers to return. An attempt cancelled this way
// releases its job without consuming an attempt, so another worker picks it
// up at once. When Shutdown returns the worker has no goroutines left.
// Calling it again waits for the first call; calling it on a worker that
// never started does nothing.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	if !w.started {
		w.mu.Unlock()
		return nil
	}
	if w.stopping {
		w.mu.Unlock()
		select {
		case <-w.stopped:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.stopping = true
	close(w.stopClaim)
	w.mu.Unlock()
	<-w.claimDone // nothing is claimed after this; the runners finish what was

	drained := make(chan struct{})
	go func() {
		w.runs.Wait()
		close(drained)
	}()
	grace := time.NewTimer(w.opts.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-drained:
	case <-grace.C:
		w.log.Warn("boson: shutdown grace ended; cancelling running attempts", "running", w.inflight.Load())
	case <-ctx.Done():
		w.log.Warn("boson: shutdown context ended; cancelling running attempts", "running", w.inflight.Load())
	}
	w.hardCancel(errShutdown)
	<-drained
	close(w.stopWatch)
	w.completer.close()
	w.loops.Wait()
	close(w.stopped)
	w.log.Info("boson: worker stopped")
	return nil
}

// every runs f now and then every d until the worker stops claiming.
func (w *Worker) every(d time.Duration, f func()) {
	defer w.loops.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-w.stopClaim:
			return
		case <-t.C:
			f()
			t.Reset(d)
		}
	}
}

// claimLoop claims free capacity from the served queues, waking on
// notifications, freed slots and the poll interval.
//
// After a claim that found work, the loop lets slots free up before it
// claims again, for at most about as long as a claim call takes (and never
// more than maxLinger) or until half the slots are free: against a store
// whose calls cost a round trip or a commit, claims then come in batches
// instead of one call per freed slot, while an idle worker still claims
// the moment work arrives.
func (w *Worker) claimLoop(wake <-chan struct{}, unsubscribe func()) {
	defer close(w.claimDone)
	defer close(w.jobs) // the runners finish what they hold, then return
	defer unsubscribe()

	poll := time.NewTimer(w.opts.PollInterval)
	defer poll.Stop()
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	next := 0
	for {
		select {
		case <-w.stopClaim:
			return
		default:
		}
		claimed := false
		var took time.Duration
		for i := 0; i < len(w.queues); i++ {
			free := w.free()
			if free <= 0 {
				break
			}
			q := w.queues[(next+i)%len(w.queues)]
			start := time.Now()
			asked := min(free, maxClaim)
			got := w.claim(q, asked)
			if got > 0 {
				claimed = true
			}
			if w.adapt != nil && got >= 0 {
				w.adapt.claimed(asked, got)
			}
			took += time.Since(start)
		}
		next++
		if w.adapt != nil {
			w.adapt.adjust(time.Now())
		}
		if claimed {
			if w.free() < w.half() {
				linger.Reset(min(took, maxLinger))
			gather:
				for w.free() < w.half() {
					select {
					case <-w.stopClaim:
						return
					case <-w.slotFreed:
					case <-linger.C:
						break gather
					}
				}
				linger.Stop()
			}
			if w.free() > 0 {
				continue // there may be more due work
			}
		}
		poll.Reset(w.opts.PollInterval)
		select {
		case <-w.stopClaim:
			return
		case <-wake:
		case <-w.slotFreed:
		case <-poll.C:
		}
	}
}

// maxLinger bounds how long the claim loop waits for slots to free up
// before it claims again after a claim that found work.
const maxLinger = 20 * time.Millisecond

// subscribe listens to the notifications of every served queue whose
// backend offers them, merging them into one coalescing wake channel.
func (w *Worker) subscribe() (<-chan struct{}, func()) {
	wake := make(chan struct{}, 1)
	var subs sync.WaitGroup
	stopSubs := make(chan struct{})
	for _, q := range w.queues {
		signal, stop, ok := core.SubscribeQueue(q.b, q.name)
		if !ok {
			continue
		}
		subs.Add(1)
		go func() {
			defer subs.Done()
			defer stop()
			for {
				select {
				case <-stopSubs:
					return
				case _, open := <-signal:
					if !open {
						return
					}
					w.watch.signal(q.name)
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return wake, func() {
		close(stopSubs)
		subs.Wait()
	}
}

// maxClaim bounds one claim call, far below any backend's batch limit.
const maxClaim = 1000

// claim takes up to free jobs of q and starts them; it returns how many,
// or -1 when the claim failed.
func (w *Worker) claim(q queueSource, free int) int {
	c := w.counters[q.name]
	seq := w.watch.seq(q.name)
	sent := w.clock.Now()
	jobs, err := q.b.Claim(w.baseCtx, core.ClaimRequest{
		Queue:    q.name,
		WorkerID: w.opts.ID,
		Limit:    free,
		LeaseTTL: w.opts.LeaseTTL,
	})
	if err != nil {
		c.claimErrors.Add(1)
		if w.baseCtx.Err() == nil {
			w.log.Error("boson: claim failed", "queue", q.name, "error", err)
		}
		return -1
	}
	c.claimed.Add(int64(len(jobs)))
	n := int64(len(jobs))
	w.inflight.Add(n)
	w.owned.Add(n)
	w.runs.Add(len(jobs))
	for _, j := range jobs {
		w.handOver(claimedJob{q: q, c: c, job: j, sent: sent, seq: seq})
	}
	return len(jobs)
}

// handOver gives a claimed job to an idle runner, or starts a runner for
// it when none is idle, so that a job never waits behind another one.
// Only the claim loop calls it.
func (w *Worker) handOver(cj claimedJob) {
	for {
		n := w.idle.Load()
		if n <= 0 {
			w.loops.Add(1)
			go w.runner(cj)
			return
		}
		if w.idle.CompareAndSwap(n, n-1) {
			// A runner counted itself idle before it waits on the
			// channel, so this send never blocks and is taken at once.
			w.jobs <- cj
			return
		}
	}
}

// half is half the slots, at least one: how many the claim loop lets free
// up before it claims again after a claim that found work.
func (w *Worker) half() int { return max(1, w.slots()/2) }

// slots returns the current number of slots.
func (w *Worker) slots() int { return int(w.limit.Load()) }

// setSlots resizes the slots. Shrinking stops nothing: running handlers
// finish and the worker claims again once fewer run than there are slots.
func (w *Worker) setSlots(n int) {
	if old := w.limit.Swap(int64(n)); int(old) != n {
		w.log.Debug("boson: slots resized", "from", old, "to", n)
		if n > int(old) {
			w.wakeClaimer()
		}
	}
}

// free is how many jobs the worker may claim now: a slot is free when no
// handler runs in it, and at most as many more jobs as there are slots may
// be writing their outcome, so that the next claim overlaps the last
// completions without building a backlog. Handlers of an adaptive worker
// that have run longer than adaptLong stop holding a slot, up to as many
// as there are slots and within the ceiling, so that a few long jobs
// never keep short ones waiting.
func (w *Worker) free() int {
	c := w.slots()
	if w.adapt != nil {
		c = min(w.opts.MaxConcurrency, c+min(c, int(w.longRunning.Load())))
	}
	return min(c-int(w.inflight.Load()), 2*c-int(w.owned.Load()))
}

// releaseExec frees the execution slot of an attempt whose handler returned.
func (w *Worker) releaseExec() {
	w.inflight.Add(-1)
	w.wakeClaimer()
}

// releaseOwned forgets a job whose outcome is written.
func (w *Worker) releaseOwned() {
	w.owned.Add(-1)
	w.wakeClaimer()
}

func (w *Worker) wakeClaimer() {
	select {
	case w.slotFreed <- struct{}{}:
	default:
	}
}

// dispatchExec is the innermost execution step: it finds the task's executor.
func (w *Worker) dispatchExec(ctx context.Context, ex *Execution) ([]byte, error) {
	r, ok := w.handlers[ex.Job.Task]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoHandler, ex.Job.Task)
	}
	return r.exec.Execute(ctx, ex)
}

// Rescue runs bounded rescue passes on every backend of the served queues
// until a pass changes fewer jobs than the limit (at most ten passes), and
// returns the summed result. It is safe to run from every worker at once.
func (w *Worker) Rescue(ctx context.Context) (core.RescueResult, error) {
	var total core.RescueResult
	var firstErr error
	for _, b := range w.backends() {
		for range 10 {
			r, err := b.Rescue(ctx, core.RescueRequest{Limit: w.opts.RescueLimit})
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				if ctx.Err() == nil {
					w.log.Error("boson: rescue failed", "error", err)
				}
				break
			}
			total.Requeued += r.Requeued
			total.Failed += r.Failed
			total.Cancelled += r.Cancelled
			if r.Total() > 0 {
				w.log.Info("boson: rescued jobs", "requeued", r.Requeued, "failed", r.Failed, "cancelled", r.Cancelled)
			}
			if r.Total() < w.opts.RescueLimit {
				break
			}
		}
	}
	return total, firstErr
}

// backends returns the distinct backends of the served queues.
func (w *Worker) backends() []core.QueueBackend {
	var bs []core.QueueBackend
	for _, q := range w.queues {
		bs = append(bs, q.b)
	}
	return distinct(bs)
}
