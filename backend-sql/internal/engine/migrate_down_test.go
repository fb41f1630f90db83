package engine

import (
	"strings"
	"testing"
)

// TestEveryMigrationDecidesItsDown checks that each embedded migration has
// a down step or a reason why none is safe, and that every down step
// renders.
func TestEveryMigrationDecidesItsDown(t *testing.T) {
	for _, dir := range []string{"postgres", "sqlite"} {
		all, err := Migrations(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(downs[dir]) != len(all) {
			t.Fatalf("%s: %d down entries for %d migrations", dir, len(downs[dir]), len(all))
		}
		for _, m := range all {
			d, ok := downs[dir][m.Version]
			switch {
			case !ok:
				t.Fatalf("%s %04d_%s: no down entry", dir, m.Version, m.Name)
			case d.sql == nil && d.reason == "", d.sql != nil && d.reason != "":
				t.Fatalf("%s %04d_%s: want either SQL or a reason", dir, m.Version, m.Name)
			case d.sql != nil:
				sql, err := d.sql(all)
				redefines := strings.HasPrefix(sql, "CREATE OR REPLACE FUNCTION {s}boson_enqueue(")
				dropsFlow := strings.Contains(sql, "DROP TABLE") && strings.Contains(sql, "flow_counts")
				alters := strings.HasPrefix(sql, "ALTER TABLE {s}")
				// A step that drops what its migration added: tables it
				// created (after locking what it alters) or indexes.
				dropsAdded := strings.Contains(sql, "DROP TABLE {s}") || strings.HasPrefix(sql, "DROP INDEX {s}")
				// A step that puts the flow counts back in the layout of
				// the version before.
				recounts := strings.Contains(sql, "INSERT INTO {s}flow_counts") && strings.Contains(sql, "DELETE FROM {s}flow_counts")
				if err != nil || !(redefines || dropsFlow || alters || dropsAdded || recounts) {
					t.Fatalf("%s %04d_%s: down SQL %.60q, %v", dir, m.Version, m.Name, sql, err)
				}
			}
		}
	}
	if _, err := redefineFunction(nil, 4); err == nil {
		t.Fatal("redefineFunction of a missing version succeeded")
	}
}
