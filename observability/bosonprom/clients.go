package bosonprom

import (
	"sort"

	boson "github.com/boson-go/boson/runtime"
	"github.com/prometheus/client_golang/prometheus"
)

// clientCounterDef names one client counter and reads it.
type clientCounterDef struct {
	name, help string
	get        func(boson.ClientCounters) int64
}

var clientCounterDefs = []clientCounterDef{
	{"spawned_total", "Jobs the backend stored for the client's spawns.", func(c boson.ClientCounters) int64 { return c.Spawned }},
	{"reused_total", "Spawns answered with an existing job through their idempotency key.", func(c boson.ClientCounters) int64 { return c.Reused }},
	{"conflicts_total", "Spawns refused because their idempotency key holds another request.", func(c boson.ClientCounters) int64 { return c.Conflicts }},
	{"rate_limited_total", "Spawns refused by the task's enqueue limits.", func(c boson.ClientCounters) int64 { return c.RateLimited }},
	{"errors_total", "Spawns the backend refused for any other reason.", func(c boson.ClientCounters) int64 { return c.Errors }},
}

// spawnBuckets are the spawn latency histogram's bounds in seconds.
var spawnBuckets = func() []float64 {
	out := make([]float64, len(boson.SpawnBuckets))
	for i, b := range boson.SpawnBuckets {
		out[i] = b.Seconds()
	}
	return out
}()

// AddClient exports the spawn counters of cl too. A nil client is ignored.
func (c *Collector) AddClient(cl *boson.Client) {
	if cl == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clients = append(c.clients, cl)
}

// collectClients exports the clients' counters summed by queue and task,
// so that several clients of one process make one series each.
func (c *Collector) collectClients(ch chan<- prometheus.Metric, clients []*boson.Client) {
	sum := map[boson.QueueTask]*boson.ClientCounters{}
	for _, cl := range clients {
		for k, v := range cl.Metrics().Tasks {
			t := sum[k]
			if t == nil {
				t = &boson.ClientCounters{}
				sum[k] = t
			}
			t.Add(v)
		}
	}
	keys := make([]boson.QueueTask, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Queue != keys[j].Queue {
			return keys[i].Queue < keys[j].Queue
		}
		return keys[i].Task < keys[j].Task
	})
	for _, k := range keys {
		v := sum[k]
		for i, d := range clientCounterDefs {
			ch <- prometheus.MustNewConstMetric(c.descs.clientCounters[i], prometheus.CounterValue, float64(d.get(*v)), k.Queue, k.Task)
		}
		ch <- constHistogram(c.descs.spawnDuration, spawnBuckets, v.SpawnHistogram[:], v.SpawnTime, k.Queue, k.Task)
	}
}
