package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// statusJSON is the output of "migrate status --json".
type statusJSON struct {
	Kind       string          `json:"kind"`
	Schema     bool            `json:"schema"`
	Version    int             `json:"version"`
	Latest     int             `json:"latest"`
	Migrations []migrationJSON `json:"migrations"`
}

// TestMigrateStatusAndDown reads the schema of each durable store before and
// after migrating, refuses downs past versions without a safe down step
// (exit 4, changing nothing, the job still there), undoes and reapplies
// Postgres versions 7 and 5, and lets stores without a schema say so.
func TestMigrateStatusAndDown(t *testing.T) {
	stores := durableStores(t)
	if os.Getenv("BOSON_TEST_REQUIRE") == "all" && len(stores) < 4 {
		t.Fatalf("BOSON_TEST_REQUIRE=all but only %d stores are set (BOSON_TEST_POSTGRES_URL, _REDIS_URL, _NATS_URL)", len(stores))
	}
	stores["mem"] = "mem:"
	for kind, url := range stores {
		t.Run(kind, func(t *testing.T) {
			u := "--url=" + url
			if kind != "sqlite" && kind != "postgres" {
				if r := must(t, ExitOK, "migrate", "status", u); !strings.Contains(r.stdout, "has no schema") {
					t.Fatalf("status: %s", r.stdout)
				}
				if s := decode[statusJSON](t, must(t, ExitOK, "migrate", "status", u, "--json")); s.Schema || len(s.Migrations) != 0 {
					t.Fatalf("status --json: %+v", s)
				}
				if r := must(t, ExitOK, "migrate", "down", "0", u); !strings.Contains(r.stdout, "no schema; nothing to undo") {
					t.Fatalf("down: %s", r.stdout)
				}
				return
			}
			migrateStatusAndDown(t, kind, u)
		})
	}
}

func migrateStatusAndDown(t *testing.T, kind, u string) {
	s := decode[statusJSON](t, must(t, ExitOK, "migrate", "status", u, "--json"))
	if !s.Schema || s.Version != 0 || s.Latest == 0 || len(s.Migrations) == 0 || s.Migrations[len(s.Migrations)-1].Version != s.Latest {
		t.Fatalf("before migrate: %+v", s)
	}
	for _, m := range s.Migrations {
		if m.Applied || m.AppliedAt != nil || !m.Known {
			t.Fatalf("before migrate: %+v", m)
		}
	}
	must(t, ExitOK, "migrate", u)
	must(t, ExitOK, "enqueue", u, "--task", "t", "--queue", "mig")
	s = decode[statusJSON](t, must(t, ExitOK, "migrate", "status", u, "--json"))
	if s.Version != s.Latest {
		t.Fatalf("after migrate: version %d of %d", s.Version, s.Latest)
	}
	for _, m := range s.Migrations {
		if !m.Applied || m.AppliedAt == nil || m.Reversible != (m.Irreversible == "") {
			t.Fatalf("after migrate: %+v", m)
		}
	}
	text := must(t, ExitOK, "migrate", "status", u).stdout
	for _, want := range []string{"VERSION", "APPLIED AT", "init", "applied", "no: it creates the tables"} {
		if !strings.Contains(text, want) {
			t.Fatalf("status does not show %q:\n%s", want, text)
		}
	}

	r := run(t, nil, "", "migrate", "down", "0", u)
	if r.code != ExitRefused || !strings.Contains(r.stderr, "cannot be reversed safely") || !strings.Contains(r.stderr, "0001_init: it creates the tables") {
		t.Fatalf("down 0: exit %d, stderr %s", r.code, r.stderr)
	}
	if again := decode[statusJSON](t, must(t, ExitOK, "migrate", "status", u, "--json")); again.Version != s.Latest {
		t.Fatalf("refused down changed the schema: %+v", again)
	}
	must(t, ExitOK, "jobs", u, "--no-migrate", "--queue", "mig", "--json")
	if n := strings.Count(must(t, ExitOK, "jobs", u, "--no-migrate", "--queue", "mig").stdout, "\n"); n != 2 {
		t.Fatalf("after the refused down the queue lists %d lines, want a header and one job", n)
	}

	if kind == "postgres" {
		// Every version above 4 has a down step so far; they are undone
		// newest first.
		var above []string
		for v := s.Latest; v > 4; v-- {
			above = append(above, strconv.Itoa(v))
		}
		r := must(t, ExitOK, "migrate", "down", "4", u)
		if want := "undid [" + strings.Join(above, " ") + "]"; !strings.Contains(r.stdout, want) {
			t.Fatalf("down 4: %s, want %q", r.stdout, want)
		}
		s := decode[statusJSON](t, must(t, ExitOK, "migrate", "status", u, "--json"))
		if s.Version != 4 || s.Migrations[4].Applied || !s.Migrations[4].Reversible {
			t.Fatalf("after down 4: %+v", s)
		}
		// A down is for rolling back to the release that the lower
		// version serves; this binary may need the versions it undid (the
		// flow columns of a later version, say), so it migrates up again
		// before it enqueues.
		must(t, ExitOK, "migrate", u)
		must(t, ExitOK, "enqueue", u, "--no-migrate", "--task", "t", "--queue", "mig")
		if s := decode[statusJSON](t, must(t, ExitOK, "migrate", "status", u, "--json")); s.Version != s.Latest {
			t.Fatalf("after migrating up again: version %d of %d", s.Version, s.Latest)
		}
	}
	if r := must(t, ExitOK, "migrate", "down", "99", u, "--json"); !strings.Contains(r.stdout, `"undone": []`) {
		t.Fatalf("down above the current version: %s", r.stdout)
	}
}

// TestMigrateUsage refuses malformed migrate command lines with exit 2.
func TestMigrateUsage(t *testing.T) {
	db := "--url=sqlite:" + t.TempDir() + "/u.db"
	for _, args := range [][]string{
		{"migrate", "down", db},
		{"migrate", "down", "x", db},
		{"migrate", "down", "1", "2", db},
		{"migrate", "status", "extra", db},
		{"migrate", "sideways", db},
	} {
		if r := run(t, nil, "", args...); r.code != ExitUsage || r.stderr == "" {
			t.Fatalf("boson %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
