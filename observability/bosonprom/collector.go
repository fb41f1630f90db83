package bosonprom

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a [Collector]. Every field is optional, but a
// collector with neither workers nor a backend exports nothing.
type Options struct {
	// Namespace prefixes every metric name; empty means "boson".
	Namespace string
	// ConstLabels are added to every metric, for example to tell apart
	// the collectors of several backends in one registry.
	ConstLabels prometheus.Labels
	// Workers are the workers whose counters are exported; more can be
	// added with [Collector.AddWorker].
	Workers []*boson.Worker
	// Clients are the clients whose spawn counters are exported, summed by
	// queue and task; more can be added with [Collector.AddClient].
	Clients []*boson.Client
	// Backend, when set, is read for job counts by queue and state.
	Backend core.QueueBackend
	// Queues restricts queue depths to these queues (one CountJobs call
	// each); empty means every queue ListQueues reports.
	Queues []string
	// Timeout bounds the backend reads of one refresh; 0 means 2 seconds.
	Timeout time.Duration
	// CacheTTL is how long queue depths are reused between scrapes; 0
	// means 5 seconds, negative reads the backend on every scrape.
	CacheTTL time.Duration
	// Clock dates the cache; nil means the process clock.
	Clock core.Clock
	// Logger receives refresh failures; nil means slog.Default().
	Logger *slog.Logger
}

// Collector is a [prometheus.Collector] of boson metrics. It is safe for
// concurrent scrapes. Worker counters are read at every scrape (they are
// in-memory atomics); queue depths come from the cache described on
// [Options].
type Collector struct {
	opts    Options
	clock   core.Clock
	log     *slog.Logger
	descs   descs
	mu      sync.Mutex
	workers []*boson.Worker
	clients []*boson.Client

	cacheMu  sync.Mutex
	cachedAt time.Time
	depths   []queueDepth
	ok       bool
}

type queueDepth struct {
	queue  string
	paused bool
	jobs   map[core.JobState]int64
}

// counterDef names one worker counter and reads it.
type counterDef struct {
	name, help string
	get        func(boson.Counters) int64
}

var counterDefs = []counterDef{
	{"claimed_total", "Jobs the worker claimed.", func(c boson.Counters) int64 { return c.Claimed }},
	{"claim_errors_total", "Claim calls that failed.", func(c boson.Counters) int64 { return c.ClaimErrors }},
	{"executions_total", "Attempts handed to a handler or executor.", func(c boson.Counters) int64 { return c.Executions }},
	{"completed_total", "Attempts that completed their job.", func(c boson.Counters) int64 { return c.Completed }},
	{"failed_total", "Attempts that ended with an error (retried or final).", func(c boson.Counters) int64 { return c.Failed }},
	{"lease_lost_total", "Attempts whose lease was superseded while they ran.", func(c boson.Counters) int64 { return c.LeaseLost }},
	{"cancelled_total", "Attempts whose job was cancelled while they ran.", func(c boson.Counters) int64 { return c.Cancelled }},
	{"suspended_total", "Attempts that released their claim with a durable sleep or a snooze.", func(c boson.Counters) int64 { return c.Suspended }},
	{"unhandled_total", "Claimed jobs whose task had no handler.", func(c boson.Counters) int64 { return c.Unhandled }},
}

type descs struct {
	counters       []*prometheus.Desc
	clientCounters []*prometheus.Desc
	spawnDuration  *prometheus.Desc
	duration       *prometheus.Desc
	queueJobs      *prometheus.Desc
	paused         *prometheus.Desc
	statsUp        *prometheus.Desc
}

// New returns a collector. Invalid options give an error wrapping
// [core.ErrInvalidArgument].
func New(opts Options) (*Collector, error) {
	if opts.Namespace == "" {
		opts.Namespace = "boson"
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("%w: bosonprom: timeout must not be negative", core.ErrInvalidArgument)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = 5 * time.Second
	}
	for _, q := range opts.Queues {
		if err := core.ValidateName("queue", q); err != nil {
			return nil, err
		}
	}
	for _, w := range opts.Workers {
		if w == nil {
			return nil, fmt.Errorf("%w: bosonprom: nil worker", core.ErrInvalidArgument)
		}
	}
	for _, cl := range opts.Clients {
		if cl == nil {
			return nil, fmt.Errorf("%w: bosonprom: nil client", core.ErrInvalidArgument)
		}
	}
	c := &Collector{opts: opts, clock: opts.Clock, log: opts.Logger, workers: append([]*boson.Worker(nil), opts.Workers...),
		clients: append([]*boson.Client(nil), opts.Clients...)}
	if c.clock == nil {
		c.clock = core.SystemClock{}
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	ns := opts.Namespace
	for _, d := range counterDefs {
		c.descs.counters = append(c.descs.counters, prometheus.NewDesc(
			prometheus.BuildFQName(ns, "worker", d.name), d.help, []string{"worker", "queue"}, opts.ConstLabels))
	}
	for _, d := range clientCounterDefs {
		c.descs.clientCounters = append(c.descs.clientCounters, prometheus.NewDesc(
			prometheus.BuildFQName(ns, "client", d.name), d.help, []string{"queue", "task"}, opts.ConstLabels))
	}
	c.descs.spawnDuration = prometheus.NewDesc(prometheus.BuildFQName(ns, "client", "spawn_duration_seconds"),
		"Latency of the backend calls that stored the client's spawns.", []string{"queue", "task"}, opts.ConstLabels)
	c.descs.duration = prometheus.NewDesc(prometheus.BuildFQName(ns, "worker", "execution_duration_seconds"),
		"Wall-clock duration of executions.", []string{"worker", "queue"}, opts.ConstLabels)
	c.descs.queueJobs = prometheus.NewDesc(prometheus.BuildFQName(ns, "queue", "jobs"),
		"Jobs in the queue by state (as of the last refresh).", []string{"queue", "state"}, opts.ConstLabels)
	c.descs.paused = prometheus.NewDesc(prometheus.BuildFQName(ns, "queue", "paused"),
		"1 when the queue is paused (only known when every queue is listed).", []string{"queue"}, opts.ConstLabels)
	c.descs.statsUp = prometheus.NewDesc(prometheus.BuildFQName(ns, "queue", "stats_up"),
		"1 when the last refresh of queue depths succeeded.", nil, opts.ConstLabels)
	return c, nil
}

// AddWorker exports the counters of w too. A nil worker is ignored.
func (c *Collector) AddWorker(w *boson.Worker) {
	if w == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.workers = append(c.workers, w)
}

// Describe implements [prometheus.Collector].
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs.counters {
		ch <- d
	}
	ch <- c.descs.duration
	for _, d := range c.descs.clientCounters {
		ch <- d
	}
	ch <- c.descs.spawnDuration
	if c.opts.Backend != nil {
		ch <- c.descs.queueJobs
		ch <- c.descs.paused
		ch <- c.descs.statsUp
	}
}

// Collect implements [prometheus.Collector].
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	workers := append([]*boson.Worker(nil), c.workers...)
	clients := append([]*boson.Client(nil), c.clients...)
	c.mu.Unlock()
	for _, w := range workers {
		c.collectWorker(ch, w.Metrics())
	}
	c.collectClients(ch, clients)
	if c.opts.Backend != nil {
		c.collectQueues(ch)
	}
}

// buckets are the histogram bounds in seconds.
var buckets = func() []float64 {
	out := make([]float64, len(boson.ExecutionBuckets))
	for i, b := range boson.ExecutionBuckets {
		out[i] = b.Seconds()
	}
	return out
}()

func (c *Collector) collectWorker(ch chan<- prometheus.Metric, s boson.MetricsSnapshot) {
	for queue, qc := range s.Queues {
		for i, d := range counterDefs {
			ch <- prometheus.MustNewConstMetric(c.descs.counters[i], prometheus.CounterValue, float64(d.get(qc)), s.WorkerID, queue)
		}
		ch <- constHistogram(c.descs.duration, buckets, qc.ExecutionHistogram[:], qc.ExecutionTime, s.WorkerID, queue)
	}
}

// constHistogram turns per-bucket counts (one per bound, then the count
// above every bound) and their summed duration into a Prometheus
// histogram.
func constHistogram(d *prometheus.Desc, bounds []float64, counts []int64, sum time.Duration, labels ...string) prometheus.Metric {
	cum := make(map[float64]uint64, len(bounds))
	var n uint64
	for i, b := range bounds {
		n += uint64(counts[i])
		cum[b] = n
	}
	n += uint64(counts[len(bounds)])
	return prometheus.MustNewConstHistogram(d, n, sum.Seconds(), cum, labels...)
}
