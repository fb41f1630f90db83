// Package natsq is a boson queue backend on NATS JetStream. It implements
// core.QueueBackend and core.Notifier; transactional enqueue is not
// offered (core.EnqueueTx returns core.ErrUnsupported), because JetStream
// has no transaction a caller could share.
//
//	nc, _ := nats.Connect(nats.DefaultURL)
//	b, err := natsq.New(ctx, nc, natsq.Options{Namespace: "shop"})
//
// # Design: one command log, every process a replica
//
// Every change to the store is a command appended to one JetStream stream
// per namespace, named BOSON_<namespace> on the subjects
// boson.<namespace>.log (and .part, below). An enqueue batch, a claim, a
// batch of completions, a heartbeat, a failure, a cancel, a config change,
// a cleanup pass, a deletion and a step of a bulk action are each one
// command. The stream is the
// only truth.
//
// Each Backend is a replica of the store. An ordered consumer delivers the
// stream (from the newest snapshot on, see Compaction), and the Backend
// applies each command, in stream order and under its lock, to memory: the
// jobs with their runs and checkpoints, one ready index per queue in claim
// order (priority, run-at, id) gated by the flow limits, the ids of all jobs and of each queue's jobs in
// order, the idempotency keys, the sequences, counters for the rate
// limits, the flow limits and the statistics, a B-tree of finished jobs for retention,
// and the task and queue configs. Two Backends in two processes that have applied the same
// prefix of the stream hold the same state.
//
// Applying a command is deterministic. The command carries everything that
// could differ between processes: the ids it chose and input it has
// already validated. A replica consults nothing else: not its clock, its
// options or randomness.
//
// # Time
//
// Every lease expiry, due time, deadline and rate window is decided by the
// time the server stored the command with (the stream message's
// timestamp), never by a process's clock: a replica decides each command
// at its message's timestamp, or at the newest timestamp before it when
// the server's clock stepped back, so every replica decides at the same
// time and a process whose clock is an hour off can make nothing happen
// early or late. Jobs are created and, unless they asked for a later
// run-at, due at their enqueue command's timestamp. Options.Clock, the
// process clock, only dates ids. Options.DecisionClock replaces the
// server's time for tests that move time by hand: commands then carry
// its time.
//
// A call such as Claim validates its input, appends the command with a
// Nats-Msg-Id, waits for the server's acknowledgement with the command's
// stream sequence, and returns the outcome of applying it once the
// consumer delivered everything up to it (the delivery carries the
// server's timestamp the command is decided at). The outcome is the one
// every other replica computes.
//
// One goroutine per Backend publishes (group commit): commands that other
// goroutines submit while a message is on its way go out together in the
// next message, and are applied one after the other at its position, so
// concurrent callers share round trips.
//
// A command larger than the server's max_payload is stored as parts on
// the .part subject, followed by its last part on .log, which names the
// parts' sequences; replicas apply it only when that last part arrives, so
// a big batch is still one atomic command.
//
// # Why it is atomic
//
// JetStream gives every stored message one place in a total order, and a
// replica applies one command as one step. The rest follows:
//
//   - Atomic batches: an Enqueue batch is one command. Its idempotency
//     and rate-limit checks run against the state at the command's
//     position, and either all its jobs are stored or none.
//   - Exclusive claims: two claims of one job are two commands; the later
//     finds the job running and passes over it. Every process computes the
//     same, so no job is handed to two claims at once, with no lock and no
//     compare-and-set retry loop.
//   - Fencing: each claim stores Lease.Token+1 in the job. A fenced command
//     (Heartbeat, Complete, Fail, Sleep, SaveCheckpoint) is accepted only
//     if, at its position in the log, the job is running under the same
//     token. Rescue and Cancel change the state first, so a stale worker's
//     later command is refused with core.ErrLeaseLost.
//   - Exact limits and keys: MaxInFlight, MaxEnqueuePerSecond and
//     idempotency keys are decided against the exact state at the
//     command's position, across all processes.
//   - Durability: a call returns success only after the server stored the
//     command (with Replicas 3, on a quorum of the cluster). If the answer
//     is lost, the call publishes again with the same message id, and the
//     server's duplicate window (two minutes) stores it at most once. A call
//     that fails may or may not have been stored; if it was, every replica
//     applies it, so nothing is half done.
//
// # Compaction
//
// Every CompactEvery commands (default 100,000) a Backend stores a snapshot
// of its state at log position S as the object "state-S-<id>" in the object
// store BOSON_<namespace>_snap, moves the key "snapshot" of the key-value
// bucket BOSON_<namespace>_meta to it with a revision compare-and-set that
// only ever moves it forward, and then purges the log below
// S+1-CompactKeep. New loads the snapshot the pointer names and consumes
// the log from S+1. A replica that fell so far behind that the commands it
// needs next were purged sees the gap in the stream sequence and reloads
// the newest snapshot, which covers the gap because the log is purged only
// below a snapshot the pointer already names. Snapshots from several
// processes at once are safe: the loser of the compare-and-set deletes its
// object. A call of a reloading replica whose command fell inside the gap
// does not learn its outcome and reports an error after the stall timeout
// (the command itself took effect); CompactKeep makes that rare. Because the snapshot is the deterministic state at S, any
// replica's snapshot at S is the same.
//
// # Reads
//
// Reads (GetJob, ListJobs, CountJobs, ...) answer from the local replica
// without a round trip. A Backend sees its own writes. What another process
// wrote a moment ago appears as soon as the consumer delivers it; call
// Sync first for a read that must include everything stored before it.
//
// The operations reads (core.RunReader, core.JobSearcher, core.TaskLister)
// answer the same way. Most of them scan the replica's jobs in id order,
// so they cost time in proportion to the retained jobs; GetRun,
// FindByIdempotencyKey, a search by ids and counts by queue, task and
// state are lookups.
//
// # Deletion
//
// DeleteJob and each step of DeleteQueue are commands (delete_job,
// delete_queue) that every replica applies at their position: the job
// goes with its runs, checkpoints and result, and its idempotency key is
// freed. A forced deletion of a running job supersedes its lease, whose
// fenced calls then fail with core.ErrLeaseLost. These commands carry
// command version 2; a replica stops on a command of a newer version or an
// unknown kind (see Fail-stop), so a version that predates them stops
// rather than skip a deletion.
//
// Claim and Rescue first look at the local replica: when it holds nothing
// due, they return at once without appending a command, so idle workers do
// not grow the log. A job that another process enqueued an instant earlier
// is then found by the next claim, which the Subscribe signal prompts.
//
// # Bulk actions
//
// The Backend implements core.BulkActor. One step of a bulk action is one
// command (bulk, command version 6) carrying the action, the cancellation
// reason, force and the ids of the step's page, which the issuer reads
// from its replica with SearchJobs. Every replica applies the action to
// each id in turn, in that one command under its lock, with the
// transition a cancel, retry or delete_job command applies (the same
// code), so a job that a worker claimed or finished since the search is
// skipped, never forced, and no reader of any replica sees a step half
// applied. The outcome of each job (changed, refused, failed) comes back
// to the caller as every command's outcome does. A step's 1,000 ids of at
// most 128 bytes take about 130 kB; a command over the server's
// max_payload is stored in parts (see above) and still applied whole.
//
// # Flow control
//
// The Backend implements core.FlowController. The flow rules are part of
// the state machine (the flow_*.go files), so every replica decides a
// claim against the same limits at the server's time of the claim
// command. The replica keeps running counters per task, (task, limit key)
// and queue, moved in the same step as every transition into or out of
// running, and the claims of each task and key in the current second. A
// queue's claimable jobs are held in a gated index (lanes per task and
// limit key under a gate per task): a claim that meets a saturated task or
// key closes its gate, and later claims skip all of its jobs at once,
// until a transition frees a slot, the second ends or the config changes.
// A sequence places only the job it may run next. Claim cost thus does not
// grow with saturated keys or blocked sequences. Commands that use flow
// control carry command version 3 (see Deletion for what versions mean).
//
// # Fan-in
//
// The Backend implements core.Awaiter. AwaitJobs is one command (await,
// version 5) that parks the job and records its wait, with an edge on
// every awaited job not yet terminal. Every transition that ends an
// awaited job, or deletes it, counts it in its waits in the same command,
// and the count that satisfies a current wait sets the waiting job due at
// the command's time. Snapshots that hold waits have snapshot version 2,
// which earlier versions refuse to load.
//
// # Server versions
//
// NATS server 2.9.0 and later, tested with 2.9.10 (Debian's) and 2.15.3.
// The backend uses only what 2.9 has: a file-backed stream with limits
// retention, the duplicate window (Nats-Msg-Id), DenyDelete, purge by
// sequence, ordered pull consumers, and a key-value bucket and an object
// store for snapshots. New reads nc.ConnectedServerVersion() and refuses older
// servers with core.ErrUnsupported, and it reads the stream's configuration
// back after creating it, because a server silently drops options it does
// not know; a mismatch (replicas, retention, limits, the duplicate window)
// is refused with core.ErrUnsupported as well.
//
// # Costs and limits
//
//   - Memory: every Backend holds every retained job, with payload,
//     runs and checkpoints. Cleanup frees them. Plan memory as for an
//     in-memory store of the retained jobs, in every process.
//   - Start-up: New loads the newest snapshot and replays the commands
//     after it, about 20,000 commands a second on a small machine;
//     batched commands carry many jobs each.
//   - Compaction: a snapshot serialises the whole state while holding the
//     replica's read lock (writes of that process wait), and is stored
//     with the namespace's Replicas. Between snapshots the log keeps up to
//     CompactEvery+CompactKeep commands.
//   - Throughput: one message is one round trip to the stream's leader
//     (plus replication with Replicas 3); concurrent calls of one Backend
//     share messages. Batch Enqueue and Complete, and claim with a Limit
//     above 1, to amortise it further.
//   - Upgrades: every process must understand every command in the log.
//     Upgrade all processes of a namespace together: a process of a
//     version before server-time decisions would apply a command that
//     carries no time of its own at the zero time. Commands of those
//     versions carry their issuer's time, and this version applies them
//     at that time.
//
// # Fail-stop
//
// A replica that meets data it cannot decode (a command, a part, a
// snapshot), a command it does not know (of an unknown kind, or of a
// newer command version), or a state that breaks an
// invariant while applying stops for good: it applies nothing more, and
// every call, the waiting ones included, fails with an error wrapping
// core.ErrInvalidState (core.ErrUnsupported for an unknown command). It
// never skips a command, so it can never drift from the other replicas or
// publish a snapshot of a state they do not share. New fails the same way
// on such a log.
package natsq
