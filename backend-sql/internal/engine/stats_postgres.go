package engine

import (
	"context"
	"time"
)

// Planner statistics on Postgres.
//
// pgx prepares each statement once per connection, and after five runs
// Postgres may keep a generic plan for it, costed with the table
// statistics of that moment. A plan made while the jobs table was empty
// or never analysed (a new schema, a table analysed while empty, a server
// whose autovacuum is off or lags behind) can read the whole table where
// the primary key finds a few rows, and it stays in use until the table's
// statistics change: a completion that read 40 rows by their ids was seen
// scanning 40,000. Statistics of the right size can still describe
// another table: taken while every job had finished, they make a backlog
// that arrived since look like no rows at all, and a claim's check for
// expired deadlines then read every active job of the task through
// jobs_task_active (believed empty) instead of jobs_claim_deadline.
// keepStats therefore analyses the engine's tables whose live rows have
// outgrown their statistics, or whose rows have changed by a fifth since
// they were taken (autovacuum's own rule, with a tenth): ANALYZE records
// what is there, and every connection plans its statements afresh. While
// autovacuum keeps up the condition seldom holds, and keepStats only
// reads the statistics.
//
// keepStats runs after Rescue and Cleanup, which every worker calls from
// time to time, at most once per statsEvery per engine. ANALYZE (SKIP_LOCKED)
// skips a table that autovacuum or another worker is analysing, and a
// role that does not own the tables gets a warning from the server, not
// an error; keepStats never fails the call it follows.
const (
	// statsMinRows is the live rows below which a table's statistics are
	// left alone: the plans of so small a table cost little either way.
	statsMinRows = 1000
	// statsGrowth is how many times its recorded row count a table may
	// grow to before it is analysed again.
	statsGrowth = 4
	// statsChanged is the share of its recorded rows that may change
	// (inserted, updated or deleted), beyond statsMinRows, before a table
	// is analysed again.
	statsChanged = 0.2
	// statsEvery bounds how often an engine reads the statistics.
	statsEvery = 5 * time.Second
)

// statsTables are the tables whose statements look rows up by key.
var statsTables = []string{"jobs", "runs", "checkpoints"}

// keepStats analyses the tables whose statistics have fallen far behind
// their size (see above). It does nothing on other stores.
func (e *Engine) keepStats(ctx context.Context) {
	if _, ok := e.d.(Postgres); !ok {
		return
	}
	now := time.Now().UnixNano()
	last := e.statsAt.Load()
	if last != 0 && now-last < int64(statsEvery) || !e.statsAt.CompareAndSwap(last, now) {
		return
	}
	args := []any{statsMinRows, statsGrowth, statsMinRows, statsChanged}
	for _, t := range statsTables {
		args = append(args, e.prefix+t)
	}
	var stale []string
	err := e.scanAll(ctx, e.st.Reader(), `SELECT c.relname FROM pg_class c JOIN pg_stat_all_tables s ON s.relid = c.oid
		WHERE s.n_live_tup >= ? AND (c.reltuples < 0 OR s.n_live_tup > ? * c.reltuples
			OR s.n_mod_since_analyze > ? + ?::float8 * c.reltuples)
		AND c.oid IN (to_regclass(?), to_regclass(?), to_regclass(?))`, args, func(rows Rows) error {
		var t string
		if err := rows.Scan(&t); err != nil {
			return err
		}
		stale = append(stale, t)
		return nil
	})
	if err != nil {
		e.log.Debug("boson: reading table statistics", "err", err)
		return
	}
	for _, t := range stale {
		if err := e.st.WriteOne(ctx, func(q Querier) error {
			_, err := q.Exec(ctx, "ANALYZE (SKIP_LOCKED) "+e.prefix+t)
			return err
		}); err != nil {
			e.log.Debug("boson: analysing a table whose statistics fell behind", "table", t, "err", err)
			continue
		}
		e.log.Debug("boson: analysed a table whose statistics fell behind", "table", t)
	}
}
