package bosonprom

import (
	"context"
	"sort"

	"github.com/boson-go/boson/core"
	"github.com/prometheus/client_golang/prometheus"
)

func (c *Collector) collectQueues(ch chan<- prometheus.Metric) {
	depths, ok := c.queueDepths()
	up := 0.0
	if ok {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.descs.statsUp, prometheus.GaugeValue, up)
	for _, d := range depths {
		for st, n := range d.jobs {
			ch <- prometheus.MustNewConstMetric(c.descs.queueJobs, prometheus.GaugeValue, float64(n), d.queue, string(st))
		}
		if len(c.opts.Queues) == 0 {
			paused := 0.0
			if d.paused {
				paused = 1
			}
			ch <- prometheus.MustNewConstMetric(c.descs.paused, prometheus.GaugeValue, paused, d.queue)
		}
	}
}

// allStates are reported for every queue, zero when the backend omits them.
var allStates = []core.JobState{
	core.StateQueued, core.StateRunning, core.StateSleeping,
	core.StateSucceeded, core.StateFailed, core.StateCancelled,
}

// queueDepths returns the cached depths, refreshing them when they are
// older than CacheTTL. A failed refresh keeps the previous values and
// reports false. Concurrent scrapes share one refresh.
func (c *Collector) queueDepths() ([]queueDepth, bool) {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	now := c.clock.Now()
	if !c.cachedAt.IsZero() && c.opts.CacheTTL > 0 && now.Sub(c.cachedAt) < c.opts.CacheTTL {
		return c.depths, c.ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	depths, err := c.readDepths(ctx)
	c.cachedAt = now
	if err != nil {
		c.log.Warn("bosonprom: reading queue depths failed", "err", err)
		c.ok = false
		return c.depths, false
	}
	c.depths, c.ok = depths, true
	return depths, true
}

func (c *Collector) readDepths(ctx context.Context) ([]queueDepth, error) {
	var out []queueDepth
	if len(c.opts.Queues) > 0 {
		for _, q := range c.opts.Queues {
			counts, err := c.opts.Backend.CountJobs(ctx, core.JobFilter{Queue: q})
			if err != nil {
				return nil, err
			}
			out = append(out, queueDepth{queue: q, jobs: withZeros(counts)})
		}
		return out, nil
	}
	qs, err := c.opts.Backend.ListQueues(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		out = append(out, queueDepth{queue: q.Queue, paused: q.Paused, jobs: withZeros(q.Jobs)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].queue < out[j].queue })
	return out, nil
}

func withZeros(m map[core.JobState]int64) map[core.JobState]int64 {
	out := make(map[core.JobState]int64, len(allStates))
	for _, st := range allStates {
		out[st] = 0
	}
	for st, n := range m {
		out[st] = n
	}
	return out
}
