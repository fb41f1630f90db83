package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// MigrationStatus is one version as the store and this build see it.
type MigrationStatus struct {
	// Version is the migration's number.
	Version int
	// Name is the migration's name (the file name after the number).
	Name string
	// Applied reports that the store records the version as applied.
	Applied bool
	// AppliedAt is when it was applied, as the store recorded it; zero
	// when not applied.
	AppliedAt time.Time
	// Known reports that this build embeds the migration. A version that
	// is applied but not known was applied by a newer build.
	Known bool
	// Reversible reports that MigrateDown can undo the version safely.
	Reversible bool
	// Irreversible says why it cannot, when Reversible is false.
	Irreversible string
}

// downStep is how one migration is undone: either SQL that restores the
// schema of the version before it, or the reason no safe down exists.
type downStep struct {
	sql    func(all []Migration) (string, error)
	reason string
}

// downs lists, per dialect directory and version, how each embedded
// migration is undone. Every embedded migration has an entry (a test
// checks it), so that a new one must decide.
var downs = map[string]map[int]downStep{
	"postgres": {
		1: {reason: "it creates the tables; undoing it drops every job, run, checkpoint and config"},
		2: {reason: "every enqueue of version 2 and later calls boson_enqueue; dropping it breaks those processes"},
		3: {reason: "it moved open runs into the jobs rows and rebuilt the runs table; the old layout cannot be restored without losing the runs finished since"},
		4: {reason: "the function's result type changed, so undoing it must drop the function; enqueues running meanwhile fail, and version 4 and later code reads the new result"},
		5: {sql: func(all []Migration) (string, error) { return redefineFunction(all, 4) }},
		6: {sql: func([]Migration) (string, error) { return pgFlowDown, nil }},
		7: {sql: dropDeclared},
		8: {sql: func([]Migration) (string, error) { return pgAwaitDown, nil }},
		9: {sql: func([]Migration) (string, error) {
			return "DROP INDEX {s}jobs_queue_state;\nDROP INDEX {s}jobs_queue_created;\nDROP INDEX {s}runs_failed", nil
		}},
		10: {sql: func([]Migration) (string, error) { return pgFlowKeyedDown, nil }},
	},
	"sqlite": {
		1: {reason: "it creates the tables; undoing it drops every job, run, checkpoint and config"},
		2: {reason: "it moved open runs into the jobs rows and rebuilt the runs table; the old layout cannot be restored without losing the runs finished since"},
		3: {sql: func([]Migration) (string, error) { return sqliteFlowDown, nil }},
		4: {sql: dropDeclared},
		5: {sql: func([]Migration) (string, error) { return sqliteAwaitDown, nil }},
		6: {sql: func([]Migration) (string, error) {
			return "DROP INDEX {s}jobs_queue_finished;\nDROP INDEX {s}jobs_queue_created;\nDROP INDEX {s}runs_failed", nil
		}},
		7: {sql: func([]Migration) (string, error) { return flowKeyedDown, nil }},
	},
}

// dropDeclared undoes the queue_declared migration: earlier builds never
// name the column, so dropping it is safe while they run. The queues'
// declarations are forgotten (their configs stay).
func dropDeclared([]Migration) (string, error) {
	return "ALTER TABLE {s}queue_configs DROP COLUMN declared", nil
}

// pgAwaitDown undoes the await migration: the waits are forgotten (a job
// parked on one stays sleeping until its Until, or until it is
// cancelled). Earlier builds never name what it drops, so it is safe
// while they run; jobs is locked first, as the migration does.
const pgAwaitDown = `LOCK TABLE {s}jobs IN ACCESS EXCLUSIVE MODE;
DROP TABLE {s}job_waits;
ALTER TABLE {s}jobs DROP COLUMN awaited_by, DROP COLUMN wait_token, DROP COLUMN wait_total,
    DROP COLUMN wait_pending, DROP COLUMN wait_any, DROP COLUMN wait_woken, DROP COLUMN wait_cc`

// sqliteAwaitDown undoes the await migration, as pgAwaitDown does.
const sqliteAwaitDown = `DROP TABLE {s}job_waits;
ALTER TABLE {s}jobs DROP COLUMN awaited_by;
ALTER TABLE {s}jobs DROP COLUMN wait_token;
ALTER TABLE {s}jobs DROP COLUMN wait_total;
ALTER TABLE {s}jobs DROP COLUMN wait_pending;
ALTER TABLE {s}jobs DROP COLUMN wait_any;
ALTER TABLE {s}jobs DROP COLUMN wait_woken;
ALTER TABLE {s}jobs DROP COLUMN wait_cc`

// redefineFunction returns the CREATE FUNCTION of migration version as a
// CREATE OR REPLACE FUNCTION: it puts that version's function body back
// without dropping it, so that enqueues running meanwhile keep working.
// Only a migration whose function has the same signature and result as
// the one it replaces can be undone this way.
func redefineFunction(all []Migration, version int) (string, error) {
	for _, m := range all {
		if m.Version != version {
			continue
		}
		i := strings.Index(m.SQL, "CREATE FUNCTION ")
		if i < 0 {
			return "", fmt.Errorf("migration %04d_%s has no CREATE FUNCTION", m.Version, m.Name)
		}
		return "CREATE OR REPLACE FUNCTION " + m.SQL[i+len("CREATE FUNCTION "):], nil
	}
	return "", fmt.Errorf("no migration %d", version)
}

// MigrationStatus returns every version this build embeds and every
// version the store records, in version order. It reads only: a store
// without the migrations table reports every version pending.
func (e *Engine) MigrationStatus(ctx context.Context, dir string) ([]MigrationStatus, error) {
	if err := e.check("migrate status"); err != nil {
		return nil, err
	}
	all, err := Migrations(dir)
	if err != nil {
		return nil, e.wrap("migrate status", err)
	}
	recorded, err := e.recordedMigrations(ctx, e.st.Reader())
	if err != nil {
		return nil, e.wrap("migrate status", err)
	}
	return statusOf(dir, all, recorded), nil
}

// recorded is one row of boson_migrations.
type recorded struct {
	name      string
	appliedAt time.Time
}

// recordedMigrations reads boson_migrations, or nothing when the table
// does not exist yet.
func (e *Engine) recordedMigrations(ctx context.Context, q Querier) (map[int]recorded, error) {
	exists, args := "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'boson_migrations'", []any(nil)
	if e.d.Name() == "postgres" {
		exists = "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = ? AND tablename = 'boson_migrations'"
		args = []any{strings.Trim(strings.TrimSuffix(e.prefix, "."), `"`)}
	}
	var n int
	if err := e.scanAll(ctx, q, exists, args, func(rows Rows) error { return rows.Scan(&n) }); err != nil {
		return nil, err
	}
	out := map[int]recorded{}
	if n == 0 {
		return out, nil
	}
	err := e.scanAll(ctx, q, "SELECT version, name, applied_at FROM {s}boson_migrations", nil, func(rows Rows) error {
		var v int
		var r recorded
		var at int64
		if err := rows.Scan(&v, &r.name, &at); err != nil {
			return err
		}
		r.appliedAt = fromUS(at)
		out[v] = r
		return nil
	})
	return out, err
}

// statusOf merges the embedded migrations with the recorded ones.
func statusOf(dir string, all []Migration, rec map[int]recorded) []MigrationStatus {
	var out []MigrationStatus
	seen := map[int]bool{}
	for _, m := range all {
		seen[m.Version] = true
		s := MigrationStatus{Version: m.Version, Name: m.Name, Known: true}
		if r, ok := rec[m.Version]; ok {
			s.Applied, s.AppliedAt = true, r.appliedAt
		}
		d, ok := downs[dir][m.Version]
		switch {
		case !ok:
			s.Irreversible = "no down step is defined for it"
		case d.sql == nil:
			s.Irreversible = d.reason
		default:
			s.Reversible = true
		}
		out = append(out, s)
	}
	for v, r := range rec {
		if !seen[v] {
			out = append(out, MigrationStatus{Version: v, Name: r.name, Applied: true, AppliedAt: r.appliedAt,
				Irreversible: "a newer build applied it; this build does not know how to undo it"})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Version < out[b].Version })
	return out
}

// ErrIrreversible marks a MigrateDown refused because a version it would
// have to undo has no safe down step. It wraps core.ErrInvalidState.
var ErrIrreversible = fmt.Errorf("%w: migration cannot be reversed safely", core.ErrInvalidState)

// MigrateDown undoes, newest first and in one write transaction after
// prelude (the Postgres dialect takes the same advisory lock as
// Migrate), every applied version above to, so that the store is left at
// version to. It changes nothing and returns an error wrapping
// ErrIrreversible when any of those versions has no safe down step, and
// core.ErrInvalidArgument when to is negative. It returns the versions
// it undid, newest first; none when the store is at or below to.
func (e *Engine) MigrateDown(ctx context.Context, dir string, to int, prelude func(ctx context.Context, q Querier) error) ([]int, error) {
	if err := e.check("migrate down"); err != nil {
		return nil, err
	}
	if to < 0 {
		return nil, e.wrap("migrate down", fmt.Errorf("%w: target version %d is negative", core.ErrInvalidArgument, to))
	}
	all, err := Migrations(dir)
	if err != nil {
		return nil, e.wrap("migrate down", err)
	}
	var undone []int
	err = e.st.WriteTx(ctx, func(q Querier) error {
		undone = nil
		if prelude != nil {
			if err := prelude(ctx, q); err != nil {
				return err
			}
		}
		rec, err := e.recordedMigrations(ctx, q)
		if err != nil {
			return err
		}
		status := statusOf(dir, all, rec)
		var steps []MigrationStatus
		for i := len(status) - 1; i >= 0; i-- {
			if s := status[i]; s.Applied && s.Version > to {
				steps = append(steps, s)
			}
		}
		var refused []string
		for _, s := range steps {
			if !s.Reversible {
				refused = append(refused, fmt.Sprintf("%04d_%s: %s", s.Version, s.Name, s.Irreversible))
			}
		}
		if len(refused) > 0 {
			return fmt.Errorf("%w: down to %d would undo %s; nothing was changed", ErrIrreversible, to, strings.Join(refused, "; "))
		}
		for _, s := range steps {
			sql, err := downs[dir][s.Version].sql(all)
			if err != nil {
				return err
			}
			if _, err := q.Exec(ctx, strings.ReplaceAll(sql, "{s}", e.prefix)); err != nil {
				return fmt.Errorf("down of migration %04d_%s: %w", s.Version, s.Name, err)
			}
			if _, err := q.Exec(ctx, e.render("DELETE FROM {s}boson_migrations WHERE version = ?"), s.Version); err != nil {
				return err
			}
			undone = append(undone, s.Version)
		}
		return nil
	})
	if err != nil {
		return nil, e.wrap("migrate down", err)
	}
	if len(undone) > 0 {
		e.log.Info("boson: schema migrated down", "dialect", e.d.Name(), "undone", undone, "version", to)
	}
	return undone, nil
}
