// Package kvq is the server-state layout of the NATS backend, built beside
// the command-log layout of package natsq until it passes the whole
// conformance suite. The NATS server holds every job, run, checkpoint,
// config and index; a process holds only the jobs it works on, and the
// process that owns the namespace's claims holds the ordered index of the
// ready jobs.
//
// # JetStream primitives
//
//   - A stream per namespace with one message per subject
//     (MaxMsgsPerSubject 1) is the key-value store of job records,
//     checkpoints, idempotency keys, configs and the owner lease. Every
//     change of a job is a compare-and-set of its record: a publish with
//     Nats-Expected-Last-Subject-Sequence set to the revision it read. That
//     is what makes a claim exclusive and fences stale workers: of two
//     writers that read the same revision, the server stores one.
//   - A work-queue stream per namespace holds one entry per job that is
//     queued or sleeping (its record and revision) and one per claim
//     (which jobs it leased). A durable pull consumer delivers them to the
//     owner of the namespace, which holds them unacknowledged while they are
//     current and acknowledges (deletes) them when the job moves on. A new
//     owner recreates the consumer, which delivers every entry again: that
//     is how it rebuilds its index from the server.
//   - The owner is elected with a compare-and-set on the lease record and
//     renews it every second; other processes send it their claims and
//     rescue passes over core NATS request-reply.
//   - Time is the server's: every process anchors its clock on the
//     timestamp the server stored a probe message with, and moves it on
//     with its monotonic clock, so its estimate is never ahead of the
//     server's time whatever its wall clock says.
package kvq
