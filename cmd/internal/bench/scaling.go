package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// runScaling fills a queue with backlog jobs straight on the store, then
// times how fast a worker drains the first cfg.ScaleMeasure of them. The
// rest stay queued (an isolated store drops them on close). With churn > 0
// the queue first has churn jobs enqueued, claimed and completed straight on
// the store, so that the backlog sits beside that many finished jobs and, on
// PostgreSQL, their dead row versions until vacuum removes them: the table
// a queue has after a busy day, not a fresh one.
func (e *env) runScaling(ctx context.Context, name string, backlog, churn int) (Result, error) {
	queue := e.queueName(name)
	batch := min(5_000, e.cfg.SpawnBatch*5)
	if churn > 0 {
		if _, err := e.enqueueRaw(ctx, fmt.Sprintf("%s churn enqueue %d", name, churn), queue, "bench-raw", churn, batch); err != nil {
			return Result{}, err
		}
		_, problems, err := e.rawDrain(ctx, fmt.Sprintf("%s churn claim+complete %d", name, churn), queue, churn)
		if err == nil && len(problems) > 0 {
			err = errors.New(strings.Join(problems, "; "))
		}
		if err != nil {
			return Result{}, fmt.Errorf("churn: %w", err)
		}
	}
	if _, err := e.enqueueRaw(ctx, fmt.Sprintf("%s fill %d", name, backlog), queue, taskNoop.Name(), backlog, batch); err != nil {
		return Result{}, err
	}
	m := e.cfg.ScaleMeasure
	tr := newTracker(m, int64(m))
	e.counting.OnComplete(tr.finished)
	defer e.counting.OnComplete(nil)
	w, err := e.newWorker(queue, e.cfg.Concurrency, tr)
	if err != nil {
		return Result{}, err
	}
	u0, c0 := readUsage(), e.counting.Calls()
	start := time.Now()
	if err := w.Start(ctx); err != nil {
		return Result{}, err
	}
	werr := e.waitDone(ctx, name+" drain", tr)
	elapsed := time.Since(start)
	if err := shutdown(w); err != nil && werr == nil {
		werr = fmt.Errorf("worker shutdown: %w", err)
	}
	u1 := readUsage()
	if werr != nil {
		return Result{}, werr
	}
	res := Result{
		Scenario:    name,
		Jobs:        m,
		Backlog:     backlog,
		Churned:     churn,
		DrainPerSec: rate(m, elapsed),
		CPUSeconds:  (u1.cpu - u0.cpu).Seconds(),
		PeakRSSMiB:  float64(u1.peakRSS) / (1 << 20),
		CallsPerJob: perJob(diffCalls(c0, e.counting.Calls()), m),
	}
	res.Problems = tr.verifyFinished()
	return res, nil
}
