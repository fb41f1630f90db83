package cli

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/boson-go/boson/cmd/internal/store"
)

func init() {
	register(&command{
		name:    "migrate",
		args:    "[status | down VERSION]",
		summary: "create, upgrade, inspect or roll back the store's schema (SQLite, Postgres)",
		help: `Creates the tables of a SQL store, or upgrades them to this version of boson.
It is idempotent: running it again changes nothing. Redis, NATS and mem have
no schema; migrate succeeds on them without doing anything.

  migrate status        list the versions: applied (with the time the store
                        recorded) or pending, and whether each can be undone
  migrate down VERSION  undo the applied versions above VERSION, newest first,
                        in one transaction (Postgres: under the migration lock)

The first versions of each store have no safe down step (they would drop
data, or code of later versions relies on them): a down past one of them
changes nothing, names each such version and why, and exits 4. Never run down while processes of a newer boson run:
they would fail, and they apply the versions again when they next migrate.`,
		run: runMigrate,
	})
}

func runMigrate(ctx context.Context, c *call) error {
	sub := ""
	if len(c.args) > 0 {
		sub, c.args = c.args[0], c.args[1:]
	}
	to := 0
	switch sub {
	case "", "up", "status":
		if err := c.noArgs(); err != nil {
			return err
		}
	case "down":
		if err := c.needArgs(1, "VERSION to migrate down to"); err != nil {
			return err
		}
		v, err := strconv.Atoi(c.args[0])
		if err != nil || v < 0 {
			return usagef("migrate down: VERSION %q is not a version number (0 or more)", c.args[0])
		}
		to, c.args = v, c.args[1:]
		if err := c.noArgs(); err != nil {
			return err
		}
	default:
		return usagef("migrate: unknown subcommand %q (want status or down VERSION)", sub)
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	c.noMigrate = true
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	switch sub {
	case "status":
		return migrateStatus(ctx, c, st)
	case "down":
		return migrateDown(ctx, c, st, to)
	}
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	if c.jsonOut {
		return c.printJSON(map[string]any{"kind": st.Kind, "location": st.Location, "migrated": st.NeedsMigrate()})
	}
	if st.NeedsMigrate() {
		c.printf("%s schema is up to date (%s)\n", st.Kind, st.Location)
	} else {
		c.printf("%s has no schema; nothing to migrate (%s)\n", st.Kind, st.Location)
	}
	return nil
}

// migrationJSON is one version in "migrate status --json".
type migrationJSON struct {
	Version      int        `json:"version"`
	Name         string     `json:"name"`
	Applied      bool       `json:"applied"`
	AppliedAt    *time.Time `json:"applied_at,omitempty"`
	Known        bool       `json:"known"`
	Reversible   bool       `json:"reversible"`
	Irreversible string     `json:"irreversible,omitempty"`
}

// schemaVersion is the highest applied version with every lower version
// this build embeds applied too, and the highest version this build
// embeds (versions need not be contiguous). ms is in version order.
func schemaVersion(ms []store.Migration) (current, known int) {
	gap := false
	for _, m := range ms {
		if m.Known {
			known = m.Version
		}
		switch {
		case gap:
		case m.Applied:
			current = m.Version
		case m.Known:
			gap = true
		}
	}
	return current, known
}

func migrateStatus(ctx context.Context, c *call, st *store.Store) error {
	ms, err := st.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	current, known := schemaVersion(ms)
	if c.jsonOut {
		out := make([]migrationJSON, len(ms))
		for i, m := range ms {
			out[i] = migrationJSON{Version: m.Version, Name: m.Name, Applied: m.Applied, Known: m.Known,
				Reversible: m.Reversible, Irreversible: m.Irreversible}
			if !m.AppliedAt.IsZero() {
				at := m.AppliedAt.UTC()
				out[i].AppliedAt = &at
			}
		}
		return c.printJSON(map[string]any{"kind": st.Kind, "location": st.Location, "schema": st.NeedsMigrate(),
			"version": current, "latest": known, "migrations": out})
	}
	if !st.NeedsMigrate() {
		c.printf("%s has no schema; nothing to migrate (%s)\n", st.Kind, st.Location)
		return nil
	}
	c.printf("%s schema at version %d; this boson knows %d (%s)\n", st.Kind, current, known, st.Location)
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tNAME\tSTATE\tAPPLIED AT\tDOWN")
	for _, m := range ms {
		state, at, down := "pending", "-", "yes"
		if m.Applied {
			state, at = "applied", m.AppliedAt.UTC().Format(time.RFC3339)
		}
		if !m.Known {
			state += " (newer boson)"
		}
		if !m.Reversible {
			down = "no: " + m.Irreversible
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", m.Version, m.Name, state, at, down)
	}
	return tw.Flush()
}

func migrateDown(ctx context.Context, c *call, st *store.Store, to int) error {
	undone, err := st.MigrateDown(ctx, to)
	if err != nil {
		return err
	}
	if c.jsonOut {
		if undone == nil {
			undone = []int{}
		}
		return c.printJSON(map[string]any{"kind": st.Kind, "location": st.Location, "schema": st.NeedsMigrate(), "undone": undone, "version": to})
	}
	switch {
	case !st.NeedsMigrate():
		c.printf("%s has no schema; nothing to undo (%s)\n", st.Kind, st.Location)
	case len(undone) == 0:
		c.printf("%s schema is at or below version %d; nothing to undo (%s)\n", st.Kind, to, st.Location)
	default:
		c.printf("%s schema migrated down to version %d: undid %v (%s)\n", st.Kind, to, undone, st.Location)
	}
	return nil
}
