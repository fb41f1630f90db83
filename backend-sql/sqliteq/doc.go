// Package sqliteq is the SQLite backend of boson: one durable file and no
// server, on the pure-Go modernc.org/sqlite driver. (It is not named
// sqlite so that it never collides with that driver's package.)
//
// Open a backend with [Open] and create or upgrade its tables with
// [Backend.Migrate]; the zero [Options] are durable and ready:
//
//	b, err := sqliteq.Open(ctx, "jobs.db", sqliteq.Options{})
//	...
//	err = b.Migrate(ctx)
//
// The file runs in WAL mode. The backend holds ONE writer connection,
// whose transactions begin IMMEDIATE and so never race another writer,
// beside a pool of read-only connections for listings and counts. A claim
// is one write transaction: an UPDATE ... WHERE id IN (SELECT ... ORDER BY
// priority, run_at, id LIMIT n) RETURNING over a partial index of the
// claimable jobs, plus the run rows; an idle worker only reads.
//
// Durability: synchronous=FULL by default, so a committed job survives a
// power cut. [SyncNormal] trades that for speed: in WAL mode a power cut
// may then lose the last transactions, never corrupt the file.
//
// Lock waits are bounded far below the leases: each statement waits at
// most Options.BusyTimeout for the file lock (another process's writer)
// and a transaction that still hits SQLITE_BUSY is rolled back and run
// again, in all for at most a quarter of the shortest lease a claim or
// heartbeat asked for ([LeaseBusyFraction]; Options.MaxBusyWait sets the
// retries by hand, and a lease too short for it is refused). A job is
// never lost or doubled by a retry, because a retried transaction was
// rolled back before it runs again, nor by a heartbeat that waited for
// the lock past its lease.
//
// The backend implements [core.Notifier] inside the process (another
// process's enqueues are seen by the polling tick, Options.PollInterval)
// and [core.TxEnqueuer] and [core.TxController] with *sql.Tx: open the
// transaction with [Backend.BeginTx] so that your own writes and the
// enqueue, cancel or retry share the one writer connection and commit
// together.
package sqliteq
