// Package faults is boson's fault-injection suite. It holds tests only.
//
// One scenario runner (runner_test.go) serves every durable backend
// (SQLite, Postgres, Redis, NATS): it spawns jobs, some with several
// durable steps, runs worker OS processes (the test binary started again
// as a worker), injects faults, and when every job has finished checks the
// invariants from the store:
//
//   - every spawned job is terminal, and spawned = succeeded + failed +
//     cancelled;
//   - no job completes twice: a succeeded job has exactly one succeeded run;
//   - no stale attempt's write is accepted: the stored result carries the
//     fencing token of the job's last claim, and that claim's run is the
//     succeeded one;
//   - checkpoint values never change once written: every value any
//     attempt read back for a step equals the value stored at the end.
//
// The faults: SIGKILL of worker processes at random moments
// (kill_test.go); a loopback TCP proxy between the workers and the store
// that drops connections, stalls them past the lease and adds latency
// (proxy_test.go, network_test.go); SIGSTOP and SIGCONT of a worker for
// longer than its lease (pause_test.go); and restarts of a store the test
// owns: Redis with appendfsync always, a Postgres cluster made with initdb,
// a NATS server on the same store directory (restart_test.go).
//
// The normal run uses a few hundred jobs per scenario. BOSON_FAULTS_FULL=1
// runs each scenario with 5,000 jobs and more faults. Every scenario
// prints a line with its figures (jobs, faults, recoveries, duplicate
// executions, duplicate completions).
//
// Worker processes decide time with the process clock and hold short
// leases (one second), since separate processes cannot share a manual
// clock; the runner waits on conditions with deadlines.
package faults
