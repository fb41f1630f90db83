// Package faults is boson's fault-injection suite. It holds tests only.
//
// One scenario runner (runner_test.go) serves every durable backend
// (SQLite, Postgres, Redis, NATS): it spawns jobs, some with several
// durable steps, 2% planned to fail and 2% cancelled at once, runs worker
// OS processes (the test binary started again as a worker), injects
// faults, and when every job has finished holds the store and the
// workers' records to these invariants (check_test.go), failing the
// scenario on any broken one:
//
//   - every spawned job is in the store and terminal, no run is left
//     running, and the store's counts match its listing and the spawned
//     jobs;
//   - the plan holds: no job failed or was cancelled that was not meant
//     to, every planned failure failed with the planned error, every
//     cancelled job stayed cancelled, and the succeeded count is the
//     planned one;
//   - no job completes twice: a succeeded job has exactly one succeeded
//     run, the store accepted at most one completion per job and only
//     for a succeeded job, from the attempt of its succeeded run;
//   - no stale attempt's write is accepted: the stored result carries the
//     fencing token of the job's last claim, and that claim's run is the
//     succeeded one;
//   - every success is backed: some worker started an attempt and sent
//     its completion under the succeeded run's token;
//   - checkpoint values never change once written: every value any
//     attempt read back for a step equals the value stored at the end;
//   - a scenario with faults fired at least one (a fault fires only when
//     it hit something: a worker that held jobs, a store serving them),
//     and a scenario built to take leases away recovered at least one
//     run.
//
// The workers record what they did as typed JSON events
// (records_test.go): the task's handler records its attempts and the
// step values it read back, and a wrapper around each worker's backend
// records every fenced write and the store's answer. Nothing is matched
// from log messages. checker_test.go shows each rule failing on a
// planted fault.
//
// The faults: SIGKILL of worker processes at random moments
// (kill_test.go); a loopback TCP proxy between the workers and the store
// that drops connections, stalls them past the lease and adds latency
// (proxy_test.go, network_test.go); SIGSTOP and SIGCONT of a worker for
// longer than its lease (pause_test.go); and restarts of a store the test
// owns: Redis with appendfsync always, a Postgres cluster made with initdb
// (any installed major version), a NATS server on the same store
// directory, one node at a time of a three-node NATS cluster
// (restart_test.go). A private server or program that is missing skips
// its scenario, or fails it when BOSON_TEST_REQUIRE requires it
// (package testreq; CI sets "all").
//
// The normal run uses a few hundred jobs per scenario. BOSON_FAULTS_FULL=1
// runs each scenario with 5,000 jobs and more faults. Every scenario
// prints a line with its figures (jobs, succeeded, failed and cancelled
// against the plan, faults, recoveries, duplicate executions, duplicate
// completions, problems); BOSON_FAULTS_TABLE=file appends them to file as
// rows of the table in docs/guarantees.md.
//
// Worker processes decide time with the process clock and hold short
// leases (one second), since separate processes cannot share a manual
// clock; the runner waits on conditions with deadlines.
package faults
