// Package e2e holds boson's end-to-end scenario matrix: a table of named
// scenarios (scen_*_test.go), each run through the runtime (package boson)
// on every backend listed in backends_test.go — mem, SQLite, Postgres,
// Redis and NATS. Adding a backend is one entry there: a factory that
// returns a fresh, isolated backend driven by the given clock, and the
// optional capabilities it offers (transactional enqueue with a way to
// begin a transaction; durability with a way to reopen the same store from
// another process).
//
// Beside the matrix, two multi-process tests run on each durable backend:
// kill_test.go kills a worker process with SIGKILL in the middle of a
// multi-step task and checks that another worker finishes it with every
// step run once, and split_test.go drains a queue from worker processes,
// one of them stopped with SIGTERM half-way.
//
// bulk_test.go enqueues jobs on every backend, lets workers fail a tenth of
// them for good, bulk-retries exactly those with core.Bulk while the workers
// run, and checks exact job and run counts; a backend without the search
// capability must answer core.ErrUnsupported. It runs 2,000 jobs by
// default and the full 100,000 with BOSON_E2E_BULK_FULL=1 (or any multiple
// of 10 with BOSON_E2E_BULK_N).
//
// admin_test.go serves the admin handler (JSON API and dashboard) with
// /metrics beside it, as `boson serve` mounts them, over every backend and
// the Redis Cluster, each part on a fresh store seeded with the same jobs:
// the search filters, task list, single-job and bulk actions and queue
// stats of the API, the dashboard's queue counts, job timeline, failed
// jobs by error and activity chart (the same from a second handler on the
// same store), and the queue gauges of /metrics as the Prometheus text
// parser reads them, all against exact expectations.
//
// Scenarios decide time with a core.ManualClock and wait for outcomes on
// conditions with deadlines, never on fixed sleeps.
//
// Services come from BOSON_TEST_POSTGRES_URL, BOSON_TEST_REDIS_URL and
// BOSON_TEST_NATS_URL, else the local defaults (127.0.0.1:5432 database
// test, :6379, :4222). A service that does not answer skips its backend,
// unless BOSON_TEST_REQUIRE requires it ("all", or a list naming it), which
// fails instead.
//
// Run it with: go test -race ./... (from this folder); the throughput
// figures with: go test -run X -bench Throughput -benchtime 2000x .
package e2e
