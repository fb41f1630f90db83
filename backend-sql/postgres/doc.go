// Package postgres is the PostgreSQL backend of boson, on pgx/v5.
//
// Open a backend on a connection string with [Open], or on a pool you
// already have with [New], then create or upgrade its tables with
// [Backend.Migrate]. Every table lives in one schema (Options.Schema,
// "boson" by default), so several applications can share a database.
//
// The claim is one statement: an UPDATE over a SELECT ... ORDER BY
// priority, run_at, id LIMIT n FOR UPDATE SKIP LOCKED that walks a
// partial index of the claimable jobs, cancels due jobs past a deadline
// and opens the run rows in the same round trip. A batch of completions
// is one statement as well, and so is a batch enqueue: one call of the
// schema's boson_enqueue function (migration 2), which locks the config
// rows of rate-limited tasks, inserts every job with one multi-row
// INSERT, resolves idempotency keys, checks the limits and notifies, all
// in one round trip.
//
// Each backend keeps a claim cursor per queue: a claim starts its index
// scan after the last job it claimed, so that the dead index entries of
// claimed jobs, which only vacuum removes, are not walked by every claim
// while vacuum is held back (see Options.ClaimRescan and the README).
//
// Behind a transaction-mode pooler such as PgBouncer set Options.Pooled:
// statements go out unnamed with cached descriptions, and the listener
// connects to Options.ListenConnString (or subscriptions poll).
//
// When Options.Clock is nil every decision uses the server's clock
// (now(); an enqueue reads clock_timestamp() once it holds its rate-limit
// locks), so workers on machines with skewed clocks agree. Durability is the
// server's commit setting (synchronous_commit).
//
// The backend implements [core.Notifier] with LISTEN/NOTIFY: enqueues,
// finishes and requeues send a notification inside their transaction,
// and a dedicated listener connection, which reconnects by itself, wakes
// the subscribers. Subscriptions also tick every Options.PollInterval so
// that a missed notification costs one interval at most.
//
// It implements [core.TxEnqueuer] and [core.TxController] with pgx.Tx:
// [Backend.EnqueueTx] stores jobs, and [Backend.CancelTx] and
// [Backend.RetryTx] cancel and retry them, inside the caller's
// transaction, visible only once it commits.
package postgres
