// Package mem is boson's in-memory backend: a complete, concurrency-safe
// implementation of [core.QueueBackend] that keeps every job in the memory
// of one process.
//
// It is the fastest backend and the reference that adapter authors read:
// each file holds one concept of the contract (enqueue.go, claim.go,
// fenced.go, rescue.go, control.go, reads.go, config.go, retention.go,
// notify.go, wake.go, and ops.go for runs across jobs, search, task
// listing and deletion) and the indexes that make it cheap live in heaps.go,
// index.go, counts.go and store.go.
//
// Jobs do not survive the process. Use it for tests, for development and
// for work that may be lost on restart; use a store-backed backend when
// jobs must be durable.
//
// # Indexes and costs
//
// One mutex guards all state; every critical section is bounded by the
// request, never by the number of stored jobs. With n jobs:
//
//   - Enqueue makes ids and reads the clock under the lock, so new jobs
//     arrive in id order and every id index and ready FIFO only appends.
//   - Each queue keeps its due jobs in claim order, (priority, run-at, id):
//     per priority a FIFO for jobs that arrive in that order (nearly all)
//     and a heap for the rest; and a scheduled heap of jobs whose run-at
//     lies ahead. Claim moves due jobs from the scheduled heap to the ready
//     lanes (the clock may jump, so this happens at claim time) and takes
//     the first of them: O(k) for k jobs in order, O(k log n) at worst.
//   - Running jobs sit in a heap by lease expiry and active jobs with a
//     cancellation deadline in a heap by deadline, so Rescue finds its work
//     in O(k log n).
//   - Terminal jobs sit in heaps by finish time (one global, one per queue),
//     so Cleanup deletes the oldest in O(k log n). A terminal job is kept
//     frozen: its job, runs and checkpoints encoded into bytes without
//     pointers (see frozen.go), so that the garbage collector does not scan
//     the jobs a process retains; reads decode a copy.
//   - Every heap tracks the position of each record, so a job leaves any
//     heap in O(log n) when it is cancelled, retried or deleted.
//   - Idempotency keys are a map by (queue, key), pointing at the job that
//     took the key last; whether it still holds it follows its unique mode
//     (core.HoldsKey). Each task keeps its count of active jobs and its
//     recent creation times for rate limits; job and run counts are kept
//     per (queue, task) and per task as they change.
//   - Flow control (see flow.go): running counts per task, queue and
//     (task, limit key) and claims per second move with every transition.
//     Jobs a limit or a sequence holds back wait outside the ready index (a
//     sequence lets in only its head; a gate parks the jobs of a saturated
//     task or key in claim order and admits the first when a slot frees),
//     so a claim never scans past them: its cost does not grow with the
//     number of saturated keys or blocked sequences.
//   - Fan-in (see await.go): each wait is kept by its job, and each
//     awaited job that has not ended holds an edge to it, marked by a flag
//     on the job's record. The first terminal transition or deletion of
//     an awaited job counts and drops its edges, and wakes the job whose
//     wait that satisfies, under the same lock; a job nobody awaits pays
//     one flag test on its way to a terminal state.
//   - Jobs are found by id in an id-ordered index of every job (binary
//     search, O(log n)); listings walk it or the per-queue or per-task
//     one from the cursor found by binary search. Leases are fenced
//     through a map of the running jobs only.
//   - The operations capabilities reuse these indexes: GetRun and
//     FindByIdempotencyKey cost O(log n) and O(1); ListAllRuns, SearchJobs
//     and DeleteQueue walk the narrowest id index from the cursor; header,
//     id-prefix and time-range searches, and counts of runs or searches
//     with a time bound, scan the jobs in that index (decoding frozen
//     ones), since memory keeps no index of headers.
//
// Returned values never share memory with the backend: payloads, headers,
// results and checkpoint values are copied in and out. A batch call
// allocates its records, and its copies of payloads, once per call rather
// than once per job.
package mem
