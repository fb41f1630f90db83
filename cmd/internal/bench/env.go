package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// benchIn is the payload of every benchmark job.
type benchIn struct {
	Seq int `json:"seq"`
}

// Tasks: one no-op, one that works for Config.Work, and the no-op of
// batch-limit, whose jobs carry limit keys under a per-key limit.
var (
	taskNoop  = boson.NewTask[benchIn, struct{}]("bench-noop")
	taskWork  = boson.NewTask[benchIn, struct{}]("bench-work")
	taskLimit = boson.NewTask[benchIn, struct{}]("bench-limit")
)

// limitKeys are the LimitKeys keys of batch-limit.
var limitKeys = func() []string {
	k := make([]string, LimitKeys)
	for i := range k {
		k[i] = fmt.Sprintf("key-%03d", i)
	}
	return k
}()

// env is what every scenario shares: the store's raw backend, the counting
// decorator the runtime runs on, and the settings.
type env struct {
	raw      core.QueueBackend
	counting *Counting
	backend  core.QueueBackend // counting, with the raw backend's capabilities
	client   *boson.Client
	cfg      Config
	prog     progress
	logger   *slog.Logger
	// kind is the store's kind; pgURL and pgSchema, for PostgreSQL, where
	// its tables are; say logs one finished phase.
	kind            string
	pgURL, pgSchema string
	say             func(format string, args ...any)
}

// queueName returns a fresh queue name for one scenario run.
func (e *env) queueName(scenario string) string {
	id := strings.ToLower(core.NewID(time.Now()))
	return fmt.Sprintf("bench-%s-%s", scenario, id[len(id)-8:])
}

// userDefaults, as a worker's concurrency, asks for boson.WorkerOptions{}
// as a user would write it: only the queue (and a silent logger) set.
const userDefaults = -1

// workerOptions returns the options of a benchmark worker on queue with
// concurrency slots (0: the runtime's default), retention off; or, for
// userDefaults, the zero options but for the queue and the logger.
func (e *env) workerOptions(queue string, concurrency int) boson.WorkerOptions {
	if concurrency == userDefaults {
		return boson.WorkerOptions{Queues: []string{queue}, Logger: e.logger}
	}
	return boson.WorkerOptions{
		Queues:            []string{queue},
		Concurrency:       concurrency,
		RetentionInterval: -1,
		Logger:            e.logger,
	}
}

// newWorker returns a started-later worker on queue whose handlers report
// to tr; the work task sleeps for cfg.Work.
func (e *env) newWorker(queue string, concurrency int, tr *tracker) (*boson.Worker, error) {
	var started func(string, time.Time)
	if tr != nil {
		started = tr.started
	}
	return e.newWorkerWith(e.workerOptions(queue, concurrency), started)
}

// newWorkerWith returns a started-later worker with opts whose handlers
// call started, when not nil, with their job's id as they begin.
func (e *env) newWorkerWith(opts boson.WorkerOptions, started func(jobID string, at time.Time)) (*boson.Worker, error) {
	w, err := boson.NewWorker(e.backend, opts)
	if err != nil {
		return nil, err
	}
	work := e.cfg.Work
	handler := func(d time.Duration) func(ctx context.Context, in benchIn) (struct{}, error) {
		return func(ctx context.Context, in benchIn) (struct{}, error) {
			if started != nil {
				info, _ := boson.Info(ctx)
				started(info.JobID, time.Now())
			}
			if d > 0 {
				time.Sleep(d)
			}
			return struct{}{}, nil
		}
	}
	if err := boson.Register(w, taskNoop, handler(0)); err != nil {
		return nil, err
	}
	if err := boson.Register(w, taskWork, handler(work)); err != nil {
		return nil, err
	}
	if err := boson.Register(w, taskLimit, handler(0)); err != nil {
		return nil, err
	}
	return w, nil
}

// spawn sends n jobs of task to queue through the runtime client, in
// batches of cfg.SpawnBatch from cfg.Spawners goroutines, and registers them
// with tr. It returns the elapsed time.
func (e *env) spawn(ctx context.Context, label, queue string, task boson.Task[benchIn, struct{}], n int, tr *tracker) (time.Duration, error) {
	var next, sent atomic.Int64
	stop := e.prog.track(label, int64(n), sent.Load)
	defer stop()
	errc := make(chan error, e.cfg.Spawners)
	start := time.Now()
	for range e.cfg.Spawners {
		go func() {
			reqs := make([]boson.Request, 0, e.cfg.SpawnBatch)
			ids := make([]string, 0, e.cfg.SpawnBatch)
			for {
				lo := int(next.Add(int64(e.cfg.SpawnBatch))) - e.cfg.SpawnBatch
				if lo >= n || ctx.Err() != nil {
					errc <- ctx.Err()
					return
				}
				hi := min(lo+e.cfg.SpawnBatch, n)
				reqs = reqs[:0]
				for i := lo; i < hi; i++ {
					if task == taskLimit {
						reqs = append(reqs, task.Request(benchIn{Seq: i}, boson.WithQueue(queue), boson.WithLimitKey(limitKeys[i%LimitKeys])))
						continue
					}
					reqs = append(reqs, task.Request(benchIn{Seq: i}, boson.WithQueue(queue)))
				}
				at := time.Now()
				sp, err := e.client.SpawnRequests(ctx, reqs...)
				if err != nil {
					errc <- fmt.Errorf("spawn: %w", err)
					return
				}
				ids = ids[:0]
				for _, s := range sp {
					ids = append(ids, s.Job.ID)
				}
				if tr != nil {
					tr.spawned(ids, at)
				}
				sent.Add(int64(len(sp)))
			}
		}()
	}
	var errs []error
	for range e.cfg.Spawners {
		errs = append(errs, <-errc)
	}
	return time.Since(start), errors.Join(errs...)
}

// enqueueRaw stores n jobs of task in queue straight on the raw backend, in
// batches of batch from cfg.Spawners goroutines, and returns the elapsed time.
func (e *env) enqueueRaw(ctx context.Context, label, queue, task string, n, batch int) (time.Duration, error) {
	var next, sent atomic.Int64
	stop := e.prog.track(label, int64(n), sent.Load)
	defer stop()
	payload := []byte(`{"seq":0}`)
	errc := make(chan error, e.cfg.Spawners)
	start := time.Now()
	for range e.cfg.Spawners {
		go func() {
			reqs := make([]core.EnqueueRequest, 0, batch)
			for {
				lo := int(next.Add(int64(batch))) - batch
				if lo >= n || ctx.Err() != nil {
					errc <- ctx.Err()
					return
				}
				hi := min(lo+batch, n)
				reqs = reqs[:0]
				for i := lo; i < hi; i++ {
					reqs = append(reqs, core.EnqueueRequest{Queue: queue, Task: task, Payload: payload})
				}
				if _, err := e.raw.Enqueue(ctx, reqs); err != nil {
					errc <- fmt.Errorf("enqueue: %w", err)
					return
				}
				sent.Add(int64(hi - lo))
			}
		}()
	}
	var errs []error
	for range e.cfg.Spawners {
		errs = append(errs, <-errc)
	}
	return time.Since(start), errors.Join(errs...)
}

// waitDone waits until tr counted target completions, failing when no
// completion arrives for cfg.StallTimeout.
func (e *env) waitDone(ctx context.Context, label string, tr *tracker) error {
	stop := e.prog.track(label, tr.target, tr.done.Load)
	defer stop()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last, lastAt := tr.done.Load(), time.Now()
	for {
		select {
		case <-tr.full:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if n := tr.done.Load(); n != last {
				last, lastAt = n, time.Now()
			} else if time.Since(lastAt) > e.cfg.StallTimeout {
				return fmt.Errorf("%s stalled: %d of %d jobs done, none in %v", label, n, tr.target, e.cfg.StallTimeout)
			}
		}
	}
}

// checkCounts compares the backend's final counts of queue with want
// succeeded jobs and nothing else. A state that holds jobs it should not
// names a few of them.
func (e *env) checkCounts(ctx context.Context, queue string, want int) []string {
	counts, err := e.raw.CountJobs(ctx, core.JobFilter{Queue: queue})
	if err != nil {
		return []string{"count jobs: " + err.Error()}
	}
	var problems []string
	for _, s := range core.AllStates {
		got := counts[s]
		w := int64(0)
		if s == core.StateSucceeded {
			w = int64(want)
		}
		if got != w {
			p := fmt.Sprintf("backend counts %d %s jobs in %s, want %d", got, s, queue, w)
			if got > w && s != core.StateSucceeded {
				p += e.examples(ctx, queue, s)
			}
			problems = append(problems, p)
		}
	}
	return problems
}

// maxExamples is how many job ids a problem names at most.
const maxExamples = 3

// examples returns " (e.g. id, id)" naming a few jobs of queue in state,
// or "" when the backend lists none.
func (e *env) examples(ctx context.Context, queue string, state core.JobState) string {
	page, err := e.raw.ListJobs(ctx, core.JobFilter{Queue: queue, States: []core.JobState{state}, Limit: maxExamples})
	if err != nil || len(page.Jobs) == 0 {
		return ""
	}
	ids := make([]string, len(page.Jobs))
	for i, j := range page.Jobs {
		ids[i] = j.ID
	}
	return " (e.g. " + strings.Join(ids, ", ") + ")"
}

func shutdown(w *boson.Worker) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return w.Shutdown(ctx)
}
