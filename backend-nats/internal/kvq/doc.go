// Package kvq is the server-state layout of the NATS backend, built beside
// the command-log layout of package kvq until it passes every suite on
// every server; then it becomes package kvq. It implements
// core.QueueBackend and core.Notifier.
//
// The NATS server holds the truth: every job, run, checkpoint, config and
// index lives in two streams per namespace. A process holds only what it
// works on; the one process that owns the namespace's claims also holds
// the ordered index of the ready jobs (not of the finished ones).
//
// # Data layout
//
// The stream BOSONKV_<namespace> (subjects bk.<namespace>.>) keeps one
// message per subject (MaxMsgsPerSubject 1), which makes it a key-value
// store whose revisions are stream sequences:
//
//   - j.<job id>: the job record, the job with its runs and the names of
//     its checkpoints;
//   - c.<job id>.<step>.<token>: a checkpoint value, written by the claim
//     with that token;
//   - k.<queue>.<hash of the key>: an idempotency key and its job;
//   - b.<batch>[.p<n>]: the intent of an enqueue batch while it is stored;
//   - t.<task>, q.<queue>: task and queue configs;
//   - own: the lease of the namespace's owner; clk.<process>: time probes.
//
// The stream BOSONRQ_<namespace> (subjects bq.<namespace>.>) is a work
// queue: a ready entry (bq.<ns>.r: a job's record and revision) for every
// job that became queued or sleeping, and a lease entry (bq.<ns>.x) for
// every claim. The owner's durable consumer holds them unacknowledged
// while they are current and acknowledges (deletes) them when the job
// moves on.
//
// # How a claim becomes exclusive
//
// Every change of a job is a compare-and-set of its record: a publish with
// Nats-Expected-Last-Subject-Sequence set to the revision it read. Of two
// writers that read the same revision the server stores one; the other
// reads the record again and decides anew. A claim sets the record to
// running under the job's next fencing token at the revision its ready
// entry names; a fenced call (Heartbeat, Complete, Fail, Sleep,
// SaveCheckpoint) stores its change only while the record is running
// under the lease's token, so a stale worker gets core.ErrLeaseLost. This
// is what makes a job's claim exclusive across any number of processes.
//
// The owner makes claims cheap and ordered: one process per namespace,
// elected by a compare-and-set on the own record and renewing it every
// second, holds every ready entry in a B-tree per queue in (priority,
// run-at, id) order and picks the due ones from it; other processes send
// their Claim and Rescue calls to it over core NATS request-reply. A new
// owner recreates the consumer, which delivers every entry again: that is
// how it rebuilds its index from the server. The owner also knows every
// claim from the lease entries, so Rescue reads a claimed job's record
// only when its lease may have expired.
//
// An enqueue batch writes its intent first, then its job records and
// ready entries, then deletes the intent; the owner completes every intent
// older than 30 seconds whose writer stopped, so every job of a batch is
// stored, or none. An idempotency key is created (expected revision 0)
// before the batch: of two enqueues with one key, one wins, and the other
// reuses its job or fails with core.ErrIdempotencyConflict.
//
// # Time
//
// Every lease expiry, due time, deadline and rate window is decided by the
// server's time. Each process publishes a probe every second and reads it
// back: the timestamp the server stored it with, plus the time that passed
// on the process's monotonic clock since, is never ahead of the server's
// clock, whatever the process's wall clock says. Options.Clock only dates
// ids; Options.DecisionClock replaces the server's time for tests that
// move time by hand.
//
// # Fail-stop
//
// A record the backend cannot decode fails every call that reads it with
// an error wrapping core.ErrInvalidState; a work-queue entry it cannot
// decode stops the owner's claims and rescue passes the same way. Nothing
// is skipped.
//
// # Server versions
//
// NATS server 2.9.0 and later, tested with 2.9.10 and the embedded current
// server. Only 2.9 features are used: streams with limits and work-queue
// retention, MaxMsgsPerSubject, direct get, expected last subject
// sequence, purge by subject, durable pull consumers. Atomic batch
// publish (2.12) is not used: on a file-backed stream of one replica each
// batch costs the server a synchronous flush, about a hundred times a
// compare-and-set publish (BenchmarkPrimitives).
package kvq
