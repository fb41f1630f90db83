// Package redisq is a boson queue backend on Redis (go-redis v9). It
// implements core.QueueBackend and core.Notifier on a single node, behind
// Sentinel, and on Redis Cluster, with one code path for all three.
//
//	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
//	backend, err := redisq.New(client, redisq.Options{Prefix: "myapp"})
//
// # Atomicity
//
// Every transition of a job — enqueue (with idempotency keys and task
// limits), claim, heartbeat, complete, fail, sleep, checkpoint, cancel,
// retry, rescue, cleanup and deletion — is one Lua function, so Redis
// runs it to the end before any other command. The functions form one Redis Functions
// library (Redis 7.0 or later), named after a hash of its code and loaded
// by the first FCALL that finds it missing on a node; on a server without
// Functions, or one that refuses FUNCTION or FCALL, the same code runs as
// scripts with EVALSHA (EVAL when the server does not know a script yet),
// which Options.Scripts can also ask for. A script reads the time once,
// checks everything it needs
// and only then writes; it never leaves half a transition behind. Redis
// writes a script's effects to the AOF and to replicas as one MULTI/EXEC
// block.
//
// The client never sends a script call again by itself (go-redis would
// after a read timeout): a call whose reply was lost may have run, and a
// transition run twice is not what was asked for. Such a call returns an
// error whose outcome is unknown, as the core contract allows; set the
// client's ReadTimeout above the run time of the largest batch. While a
// script runs, Redis serves nothing else, so very large batches (the
// default limit is 10,000) pause every other client for their duration.
//
// Every key a script touches is passed in KEYS; none is built inside a
// script. That is why the jobs of a queue are not one key per job but
// fields of one hash per queue: the claim script finds job ids in the ready
// set and must still touch only keys it was given.
//
// # Key layout
//
// All keys of one queue share the hash tag {prefix:queue}, so every script,
// which works on one queue, stays within one Cluster slot:
//
//	{p:q}:job    hash      "<id>" -> record, "<id>|x" -> cold attributes, "<id>|r" -> result
//	{p:q}:ready  zset lex  "<priority+1000, 4 digits>|<due µs, 18 digits>|<id>": due now
//	{p:q}:sched  zset      id by due time: scheduled, retrying or sleeping, not yet due
//	{p:q}:lease  zset      id of a running job by lease expiry (exactly the running jobs; the expiry lives only here)
//	{p:q}:dead   zset      id of an unfinished job by its cancellation deadline
//	{p:q}:done   zset      id of a terminal job by finish time
//	{p:q}:idx    zset lex  "s|<state>|<id>" for every state but running, "k|<task>|<id>"
//	{p:q}:idem   hash      idempotency key -> "<id>:<fingerprint>"
//	{p:q}:rate   zset lex  "<task>|<created µs>|<first id>|<count>": one per enqueue call and task
//	{p:q}:run    hash      "<id>|<n>" -> run record, for every run but a job's latest
//	{p:q}:cp     hash      "<id>|<step>|v" value, "<id>|<step>|c" time
//	{p:q}:cpx    zset lex  "<id>|<step>"
//	{p:q}:conf   hash      paused, retention, cleanup_limit
//	{p:q}:rstat  hash      "<task>|<run status>" counts of finished runs, "<task>|rt" run time µs
//	{p:q}:cnt    hash      "<task>|<state>" job counts, "<task>|pending" jobs of prepared batch parts
//	{p:q}:pend   hash      "m|<batch>" -> "<coordinator queue>|<prepared µs>", "i|<batch>" -> items
//	{p:q}:txn    hash      "<batch>" -> "<c|a>|<decided µs>|<participant queues>"
//
// A job's record holds what transitions read or change, in a fixed binary
// layout (struct.pack in the scripts, parseRecord in Go): times, state and
// run status as codes, priority, attempts, token, the cancellation deadline
// of the current phase, whether it is in the ready set, its latest run,
// task, worker, errors and idempotency key. A running job's lease expiry is
// its score in the lease set only, so a heartbeat writes no record; a result
// is the field "<id>|r"; the cold attributes (payload, headers, retry
// policy, actor, cancellation policy, fingerprint) are packed by the client
// at enqueue into "<id>|x" and never rewritten; the idempotency hash maps a
// key to "<id>:<fingerprint>". A run's id is "<job id>.<token>", so the
// record does not hold it and the claim script makes it. The client packs a
// new job's record too, all but its run at, creation time, deadline and
// ready flag, which depend on the script's clock: the enqueue script splices
// those in and never builds a record table. A script reads all records of a
// batch with one HMGET, writes them back with one HSET and sends its index
// changes as one ZADD and one ZREM per key, so a batch costs a handful of
// commands however many jobs it holds. A run moves from the record to the
// run hash only when the job's next run starts.
//
// Keys that span queues share the tag {prefix}: {p}:queues (the set of
// queues), {p}:tasks (task configs as JSON) and {p}:jobq (job id -> queue).
// Names cannot contain braces or '|' (core.ValidateName), so a tag cannot
// be forged and '|' sorts above every character of a name or an id, which
// makes "<prefix>|" ranges exact.
//
// # Claim order and time
//
// The ready set is a lexicographic sorted set whose members sort by
// priority, then due time, then id, exactly the claim order. The claim
// script first moves every due job of the scheduled set (at most 5,000 plus
// the claim limit per call) into the ready set, then pops from its head;
// jobs past a cancellation deadline are cancelled on the way and do not
// count. Times are integer microseconds. The clock is the server's TIME
// unless Options.Clock is set; then the time is passed to each script.
// The fencing token is the lease token of the job's record and grows by
// one per claim.
//
// # Finding a job by id
//
// Heartbeat, Complete, Cancel, GetJob and the other calls that name a job
// by id must find its queue before they can run the queue's script. Enqueue
// writes "id -> queue" into {p}:jobq in the same round trip that reads the
// task configs, before the enqueue script stores the job; so a stored job
// can always be found. If the enqueue is then refused the entries are
// removed again; an entry left behind by a crash maps an id that has no job,
// which reads as not found. Cleanup, DeleteJob and DeleteQueue remove the
// entries of the jobs they delete. A Backend also remembers the queue of every job it claimed, so a
// worker's heartbeats and completions cost one script call each. An id the
// map does not know is looked for in every queue before it is reported
// unknown, and mapped again when found: on a cluster the node of the
// {prefix} slot may lose writes in a failover that the queue's node kept.
//
// # Redis Cluster
//
// Everything of one queue lives in one slot, so all per-queue transitions
// are as atomic on a cluster as on one node. Three things span queues and
// therefore slots:
//
//   - A batch Enqueue that names several queues is one script on a single
//     node. On a cluster, whose queues live in different slots, it is committed
//     in two phases: every queue but the first prepares its part (checked,
//     stored out of sight, its idempotency keys reserved and its jobs counted
//     against in-flight limits); then the first queue, the coordinator, writes
//     its own jobs and records the decision in one script, and the prepared
//     parts are stored. The decision is the single point that settles the
//     batch: a batch whose Enqueue returned nil is stored whole, and a crash
//     of the client or of a node at any step leaves it whole or absent, never
//     in part. Rescue stores the parts of a committed batch that its Enqueue
//     could not, and aborts a batch left undecided for BatchTimeout (a commit
//     that comes later refuses); an enqueue that needs a reserved key waits
//     for the decision or makes it after that timeout. Between the commit and
//     its last part the queues of a batch show their jobs one after another; a
//     batch within one queue has no such window.
//   - Task limits (MaxInFlight, MaxEnqueuePerSecond) count a task's jobs in
//     every queue. The enqueue script counts the queues of its own call
//     atomically; the counts of other queues are read just before it. Two
//     enqueues of the same task to different queues at the same instant can
//     therefore both pass and exceed the limit by the size of one batch.
//     Within one queue, limits are exact.
//   - {p}:jobq, {p}:tasks and {p}:queues live in one slot: every enqueue
//     writes to that node, and id lookups that miss the process cache read
//     from it.
//
// Reads across queues (ListJobs, CountJobs, TaskStats, ListQueues, Rescue
// and Cleanup over all queues) issue one pipelined call per step; a listing
// that races with changes may show a page shorter than its limit, but its
// cursor still visits every matching job once.
//
// # Operations
//
// Backend also implements core.RunReader, core.JobSearcher, core.TaskLister
// and core.JobDeleter. The reads use the indexes the transitions keep and
// add no index write to any transition: queue, task and states select lex
// ranges of each queue's index (running jobs: its lease set), an id prefix
// narrows them, ids go through {p}:jobq, and a finished range reads the
// done sets when they hold few enough jobs; headers, created ranges, run
// statuses and start times are matched on what is read. Listings merge the
// ranges of every queue in id order, so their pages visit each match once,
// and read a bounded number of jobs per call (a short page then continues
// where the call stopped); counts that must scan are bounded too and refuse
// a filter that would read more. DeleteJob and DeleteQueue are scripts: a
// job goes with its record, result, runs, checkpoints, index entries,
// counts and idempotency key in one step, and a forced deletion of a
// running job takes its lease, so the worker's next fenced call fails with
// core.ErrLeaseLost. The README lists which filter reads what, and the
// bounds.
//
// # Flow control
//
// Backend implements core.FlowController: the concurrency limits and start
// rates of core.TaskConfig and core.QueueConfig at claim, sequences, the
// unique modes and the flow fields of jobs and searches, each kept by the
// same scripts as the transitions. Running counts are counters that every
// transition into or out of running changes; a claim passes over a job it
// may not start by moving it into its group's gate, out of the ready set,
// and the script that frees room lets the next one back, so a claim's cost
// does not grow with saturated keys or blocked sequences (only a
// sequence's head is ever claimable). Task limits span queues: on a
// cluster they need Options.OneSlot, which puts the whole prefix in one
// slot; without it a cluster refuses them with core.ErrUnsupported. The
// README has the design and its costs.
//
// # Notifications
//
// Scripts PUBLISH on the channel "<prefix>:wake:<queue>" when a job becomes
// claimable now (enqueue, retry, fail with an immediate retry, rescue) or
// finishes. A Backend holds one pub/sub connection per subscribed queue,
// shared by all its subscribers of that queue, so an idle worker sends no
// commands at all; each subscription also signals every
// Options.PollInterval (one second by default) to make up for messages
// lost while the connection was down, which costs an idle worker one claim
// a second. A job that becomes due by the passage of time (scheduled,
// retried later, asleep) is not announced; that periodic signal finds it.
// On a cluster, PUBLISH reaches every node over the cluster bus; sharded
// pub/sub would not, but needs Redis 7 on every node.
//
// # Fan-in
//
// Backend implements core.Awaiter. AwaitJobs is one script on the waiting
// job's queue that ends its run, stores the wait and an edge on every
// awaited job not yet terminal, and parks the job as sleeping. Every
// script that ends or deletes a job (Complete, Fail, Cancel, Heartbeat,
// Claim and Rescue at a deadline or out of attempts, DeleteJob,
// DeleteQueue, Cleanup) counts it for the waits on its edges and wakes, in
// the same call, the job whose current wait it satisfies; a job nobody
// awaits costs one EXISTS per call. On one node and with Options.OneSlot
// the awaited jobs may be in any queue. On a cluster with a slot per
// queue no script can reach another slot, so a wait must name jobs of the
// waiting job's own queue, and one across queues gives an error wrapping
// core.ErrUnsupported.
//
// # Transactional enqueue
//
// Redis has no transaction a caller could share with the backend's
// scripts, so Backend does not implement core.TxEnqueuer and
// core.EnqueueTx reports core.ErrUnsupported.
//
// # Durability
//
// Redis acknowledges a script before it reaches the disk unless the AOF is
// fsynced on every write. See the README for what a restart loses under each
// persistence setting; run with appendonly yes and appendfsync always when
// no acknowledged job may ever be lost, and with maxmemory-policy
// noeviction always, since an evicted key takes jobs with it.
package redisq
