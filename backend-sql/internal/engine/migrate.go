package engine

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations
var migrationFS embed.FS

// Migration is one embedded, versioned schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations lists the embedded migrations of a dialect directory
// ("postgres" or "sqlite") in version order. File names are
// NNNN_name.sql; the number is the version.
func Migrations(dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, path.Join("migrations", dir))
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, ent := range entries {
		name := ent.Name()
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", name, err)
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", dir, name))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: string(b)})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Version < out[b].Version })
	return out, nil
}

// Migrate applies every embedded migration of dir that the store has not
// recorded, in one write transaction. prelude runs first in the same
// transaction (the Postgres dialect takes its advisory lock and creates
// the schema there). It returns the versions it applied.
func (e *Engine) Migrate(ctx context.Context, dir string, prelude func(ctx context.Context, q Querier) error) ([]int, error) {
	return e.MigrateTo(ctx, dir, 0, prelude)
}

// MigrateTo is Migrate that stops after version upTo (0: the last), so
// that tests can build the schema of an earlier release.
func (e *Engine) MigrateTo(ctx context.Context, dir string, upTo int, prelude func(ctx context.Context, q Querier) error) ([]int, error) {
	if err := e.check("migrate"); err != nil {
		return nil, err
	}
	all, err := Migrations(dir)
	if err != nil {
		return nil, e.wrap("migrate", err)
	}
	var applied []int
	err = e.st.WriteTx(ctx, func(q Querier) error {
		applied = nil
		if prelude != nil {
			if err := prelude(ctx, q); err != nil {
				return err
			}
		}
		if _, err := q.Exec(ctx, e.render("CREATE TABLE IF NOT EXISTS {s}boson_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)")); err != nil {
			return err
		}
		done := map[int]bool{}
		if err := e.scanAll(ctx, q, "SELECT version FROM {s}boson_migrations", nil, func(rows Rows) error {
			var v int
			if err := rows.Scan(&v); err != nil {
				return err
			}
			done[v] = true
			return nil
		}); err != nil {
			return err
		}
		for _, m := range all {
			if done[m.Version] || upTo > 0 && m.Version > upTo {
				continue
			}
			if _, err := q.Exec(ctx, strings.ReplaceAll(m.SQL, "{s}", e.prefix)); err != nil {
				return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := q.Exec(ctx, e.render("INSERT INTO {s}boson_migrations (version, name, applied_at) VALUES (?, ?, ?)"),
				m.Version, m.Name, toUS(time.Now())); err != nil {
				return err
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	if err != nil {
		return nil, e.wrap("migrate", err)
	}
	if len(applied) > 0 {
		e.log.Debug("boson: schema migrated", "dialect", e.d.Name(), "versions", applied)
	}
	return applied, nil
}
