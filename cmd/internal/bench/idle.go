package bench

import (
	"context"
	"time"
)

// wireCounter reports commands sent to the store's server, when it has one.
type wireCounter func() (int64, bool)

// runIdle starts a worker with default settings on an empty queue and
// counts the backend calls (and, where the store has a server, the
// commands on the wire) it makes per second.
func (e *env) runIdle(ctx context.Context, wire wireCounter) (Result, error) {
	const name = "idle"
	queue := e.queueName(name)
	w, err := e.newWorker(queue, 0, nil)
	if err != nil {
		return Result{}, err
	}
	if err := w.Start(ctx); err != nil {
		return Result{}, err
	}
	defer func() { _ = shutdown(w) }()
	// Let start-up traffic (first claim, first rescue pass) pass.
	select {
	case <-time.After(min(2*time.Second, e.cfg.IdleDuration)):
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	u0 := readUsage()
	c0, w0 := e.counting.Calls(), int64(0)
	if wire != nil {
		w0, _ = wire()
	}
	start := time.Now()
	stop := e.prog.track(name+" (seconds)", int64(e.cfg.IdleDuration/time.Second), func() int64 { return int64(time.Since(start) / time.Second) })
	select {
	case <-time.After(e.cfg.IdleDuration):
	case <-ctx.Done():
		stop()
		return Result{}, ctx.Err()
	}
	elapsed := time.Since(start)
	stop()
	c1 := e.counting.Calls()
	u1 := readUsage()
	res := Result{
		Scenario:      name,
		CPUSeconds:    (u1.cpu - u0.cpu).Seconds(),
		PeakRSSMiB:    float64(u1.peakRSS) / (1 << 20),
		CallsByMethod: map[string]float64{},
	}
	var total int64
	for k, v := range diffCalls(c0, c1) {
		total += v
		res.CallsByMethod[k] = float64(v) / elapsed.Seconds()
	}
	res.CallsPerSec = float64(total) / elapsed.Seconds()
	if wire != nil {
		if w1, ok := wire(); ok {
			res.WirePerSec = float64(w1-w0) / elapsed.Seconds()
		}
	}
	return res, nil
}
