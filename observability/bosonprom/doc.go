// Package bosonprom exports boson's metrics to Prometheus: the counters and
// execution-time histogram of runtime workers ([boson.Worker.Metrics]), the
// spawn counters and latency of clients ([boson.Client.Metrics]), and the
// job counts by queue and state read from a [core.QueueBackend].
//
//	c, err := bosonprom.New(bosonprom.Options{Workers: []*boson.Worker{w}, Backend: backend})
//	prometheus.MustRegister(c)
//
// Queue depths are read with one ListQueues call (or CountJobs per queue
// when Options.Queues is set) under a timeout, and cached, so frequent
// scrapes cost the store at most one read per CacheTTL.
package bosonprom
