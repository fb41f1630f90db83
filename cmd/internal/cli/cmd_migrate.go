package cli

import "context"

func init() {
	register(&command{
		name:    "migrate",
		summary: "create or upgrade the store's schema (SQLite, Postgres); a no-op elsewhere",
		help: `Creates the tables of a SQL store, or upgrades them to this version of boson.
It is idempotent: running it again changes nothing. Redis, NATS and mem have
no schema; migrate succeeds on them without doing anything.`,
		run: runMigrate,
	})
}

func runMigrate(ctx context.Context, c *call) error {
	if err := c.noArgs(); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	c.noMigrate = true
	st, err := c.open(ctx)
	if err != nil {
		return err
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
