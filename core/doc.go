// Package core is boson's minimal contract: the data types that describe jobs,
// runs, task and queue configuration, checkpoints and statistics, and the
// [QueueBackend] interface that every store adapter implements.
//
// It imports nothing outside the standard library, so an adapter for a new
// store depends on this package and on its own client only.
//
// # Division of labour
//
// A backend owns the atomic transitions of a job: enqueue, claim, heartbeat,
// complete, fail, sleep, checkpoint, cancel, retry, rescue and cleanup. It
// enforces fencing: every mutation made on behalf of a worker carries the
// [Lease] the claim returned, and the backend refuses it with [ErrLeaseLost]
// once that claim has been superseded. The runtime owns policy: when to retry
// and with what backoff, which queues to serve, and how much to run at once.
//
// # Job life cycle
//
//	          Enqueue                Claim
//	──────────────▶ queued ─────────────────▶ running ──Complete──▶ succeeded
//	                 ▲  ▲                      │  │ │
//	 Fail(retry) /   │  └──── Sleep ─ sleeping ◀┘  │ └──Fail(terminal or
//	 Rescue          └─────────────────────────────┘     budget spent)──▶ failed
//	                                  Cancel (queued, sleeping, running) ──▶ cancelled
//
// A sleeping job is claimable again once its run-at time has come; waking does
// not consume an attempt. Every claim opens a [Run]; a run ends when its claim
// ends, whatever the reason.
//
// # Time
//
// Each backend decides leases, deadlines and due times with one clock. By
// default that is the store's own clock where it has one, otherwise the
// process clock. A backend accepts a [Clock] in its options; when one is given
// every decision uses it, which lets the conformance suite move time forward
// without sleeping. Times are kept with at least millisecond precision.
//
// # Operations capabilities
//
// Reading runs across jobs ([RunReader]), searching jobs by header, id and
// time ([JobSearcher]), naming tasks ([TaskLister]) and deleting jobs and
// queues ([JobDeleter]) are optional interfaces beside [QueueBackend], so
// that an adapter written before them keeps working; callers test for them
// and report [ErrUnsupported]. [Bulk] builds cancel, retry and delete by
// filter on them, one bounded step at a time, from each store's own
// per-job transitions, so it is safe while workers run.
//
// # Declared queues
//
// Queues are implicit unless the application declares them: a store that
// implements [QueueDeclarer] stores a declaration with the queue's config
// ([QueueDeclarer.CreateQueue], idempotent, [ErrQueueConflict] on another
// config), and a strict client refuses to spawn to an undeclared queue
// ([ErrQueueNotDeclared]). [CreateQueue] and [QueueDeclared] return
// [ErrUnsupported] on a store without it.
//
// # Transactions
//
// Stores with transactions can join the caller's: [TxEnqueuer] enqueues
// and [TxController] cancels and retries inside a transaction the caller
// owns, so that the application's rows and the queue's state commit or
// roll back together. [EnqueueTx], [CancelTx] and [RetryTx] return
// [ErrUnsupported] on a backend without them.
//
// # Writing an adapter
//
// Implement [QueueBackend], call [PrepareJobs] from Enqueue so that validation,
// defaults and fingerprints match every other backend, and run the shared
// suite from github.com/boson-go/boson/conformance against it.
package core
