package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/boson-go/boson/core"
)

func TestHelp(t *testing.T) {
	r := must(t, ExitOK, "--help")
	for _, want := range []string{"Commands:", "Exit codes:", "migrate", "bench", "BOSON_URL"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("boson --help lacks %q", want)
		}
	}
	for _, c := range commands {
		r := must(t, ExitOK, c.name, "--help")
		if !strings.Contains(r.stdout, "Usage: boson "+c.name) || !strings.Contains(r.stdout, "-url") {
			t.Errorf("boson %s --help:\n%s", c.name, r.stdout)
		}
		r = must(t, ExitOK, "help", c.name)
		if !strings.Contains(r.stdout, "Usage: boson "+c.name) {
			t.Errorf("boson help %s:\n%s", c.name, r.stdout)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/u.db"
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"--bogus", "jobs"},
		{"jobs", "--url", db, "--state", "sideways"},
		{"jobs", "--url", db, "--limit", "0"},
		{"jobs", "--url", db, "get"},
		{"jobs", "--url", db, "launch"},
		{"cancel", "--url", db},
		{"retry", "--url", db},
		{"pause", "--url", db},
		{"pause", "--url", db, "bad.queue"},
		{"enqueue", "--url", db},
		{"enqueue", "--url", db, "--task", "t", "--payload", "{not json"},
		{"enqueue", "--url", db, "--task", "bad task"},
		{"enqueue", "--url", db, "--task", "t", "--priority", "5000"},
		{"migrate", "--url", "ftp://example.com"},
		{"migrate", "--url", db, "extra"},
		{"stats", "--url", db, "--task", "no spaces allowed"},
		{"bench", "--url", "mem:", "--scenarios", "everything"},
		{"bench", "--url", "mem:", "-n", "0"},
	} {
		r := run(t, nil, "", args...)
		if r.code != ExitUsage {
			t.Errorf("boson %s: exit %d, want %d\nstderr: %s", strings.Join(args, " "), r.code, ExitUsage, r.stderr)
		}
		if r.stderr == "" {
			t.Errorf("boson %s: nothing on stderr", strings.Join(args, " "))
		}
	}
}

func TestOperationalErrorExitsOne(t *testing.T) {
	r := run(t, nil, "", "jobs", "--url", "redis://127.0.0.1:1/0", "--timeout", "2s")
	if r.code != ExitError {
		t.Fatalf("exit %d, want %d; stderr %s", r.code, ExitError, r.stderr)
	}
}

func TestMemInOneInvocation(t *testing.T) {
	r := must(t, ExitOK, "enqueue", "--url", "mem:", "--task", "send", "--payload", `{"to":"a"}`)
	if !strings.HasPrefix(r.stdout, "enqueued ") {
		t.Fatalf("enqueue printed %q", r.stdout)
	}
	r = must(t, ExitOK, "--url", "mem:", "--json", "stats")
	if !strings.Contains(r.stdout, `"queues"`) {
		t.Fatalf("stats --json printed %q", r.stdout)
	}
	must(t, ExitOK, "migrate", "--url", "mem:")
}

func TestURLFromEnvironment(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/env.db"
	env := map[string]string{"BOSON_URL": db}
	if r := run(t, env, "", "enqueue", "--task", "t", "--json"); r.code != ExitOK {
		t.Fatalf("enqueue: %d %s", r.code, r.stderr)
	}
	r := run(t, env, "", "jobs", "--json")
	page := decode[jobsPage](t, r)
	if len(page.Jobs) != 1 {
		t.Fatalf("BOSON_URL store holds %d jobs, want 1", len(page.Jobs))
	}
	// --url wins over BOSON_URL.
	r = run(t, env, "", "jobs", "--json", "--url", "sqlite:"+t.TempDir()+"/other.db")
	if page := decode[jobsPage](t, r); len(page.Jobs) != 0 {
		t.Fatalf("--url store holds %d jobs, want 0", len(page.Jobs))
	}
}

func TestNoMigrateOnFreshSQLiteFails(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/fresh.db"
	r := run(t, nil, "", "jobs", "--url", db, "--no-migrate")
	if r.code != ExitError {
		t.Fatalf("jobs --no-migrate on a fresh file: exit %d (%s), want %d", r.code, r.stderr, ExitError)
	}
	must(t, ExitOK, "migrate", "--url", db)
	must(t, ExitOK, "jobs", "--url", db, "--no-migrate")
}

// TestLifecycle walks every command over each durable store.
func TestLifecycle(t *testing.T) {
	for kind, url := range durableStores(t) {
		t.Run(kind, func(t *testing.T) { lifecycle(t, url) })
	}
}

func lifecycle(t *testing.T, url string) {
	u := "--url=" + url
	must(t, ExitOK, "migrate", u)
	must(t, ExitOK, "migrate", u, "--json")

	// enqueue and get
	r := must(t, ExitOK, "enqueue", u, "--json", "--task", "mail", "--queue", "cli", "--payload", `{"to": "x"}`,
		"--priority", "-5", "--header", "trace=abc", "--max-attempts", "3", "--actor", "ops")
	res := decode[core.EnqueueResult](t, r)
	j := res.Job
	if j.State != core.StateQueued || j.Priority != -5 || j.MaxAttempts != 3 || j.Headers["trace"] != "abc" || j.Actor != "ops" || string(j.Payload) != `{"to":"x"}` {
		t.Fatalf("enqueued job %+v", j)
	}
	r = must(t, ExitOK, "jobs", "get", j.ID, u)
	for _, want := range []string{j.ID, "queued", "mail", "trace", `{"to":"x"}`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("jobs get lacks %q:\n%s", want, r.stdout)
		}
	}
	r = must(t, ExitOK, "jobs", "get", j.ID, u, "--json", "--runs", "--checkpoints")
	if d := decode[jobDetail](t, r); d.Job.ID != j.ID {
		t.Fatalf("jobs get --json: %+v", d)
	}
	r = must(t, ExitNotFound, "jobs", "get", "01JUNKJUNKJUNKJUNKJUNKJUNK", u)
	if !strings.Contains(r.stderr, "not found") {
		t.Errorf("not found stderr: %s", r.stderr)
	}

	// stdin payload and idempotency keys
	r = run(t, nil, `{"n": 1}`, "enqueue", u, "--task", "mail", "--queue", "cli", "--payload-file", "-", "--key", "k1", "--json")
	if r.code != ExitOK {
		t.Fatalf("enqueue from stdin: %d %s", r.code, r.stderr)
	}
	first := decode[core.EnqueueResult](t, r)
	r = run(t, nil, `{"n": 1}`, "enqueue", u, "--task", "mail", "--queue", "cli", "--payload-file", "-", "--key", "k1")
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, "reused "+first.Job.ID) {
		t.Fatalf("second enqueue with the key: %d %q %s", r.code, r.stdout, r.stderr)
	}
	must(t, ExitRefused, "enqueue", u, "--task", "mail", "--queue", "cli", "--payload", `{"n": 2}`, "--key", "k1")

	// list, filters, pagination
	var ids []string
	for i := range 5 {
		r := must(t, ExitOK, "enqueue", u, "--json", "--task", "page", "--queue", "pages", "--payload", fmt.Sprint(i))
		ids = append(ids, decode[core.EnqueueResult](t, r).Job.ID)
	}
	r = must(t, ExitOK, "jobs", u, "--json", "--queue", "pages", "--limit", "2")
	page := decode[jobsPage](t, r)
	if len(page.Jobs) != 2 || page.Jobs[0].ID != ids[0] || page.Next != ids[1] {
		t.Fatalf("first page: %d jobs, next %q", len(page.Jobs), page.Next)
	}
	r = must(t, ExitOK, "jobs", "list", u, "--json", "--queue", "pages", "--limit", "2", "--cursor", page.Next)
	if page := decode[jobsPage](t, r); len(page.Jobs) != 2 || page.Jobs[0].ID != ids[2] {
		t.Fatalf("second page: %+v", page)
	}
	r = must(t, ExitOK, "jobs", u, "--json", "--queue", "pages", "--limit", "2", "--all", "--desc")
	if page := decode[jobsPage](t, r); len(page.Jobs) != 5 || page.Jobs[0].ID != ids[4] || page.Next != "" {
		t.Fatalf("--all --desc: %d jobs", len(page.Jobs))
	}
	r = must(t, ExitOK, "jobs", u, "--queue", "pages", "--limit", "2")
	if !strings.Contains(r.stdout, "next: "+ids[1]) || !strings.Contains(r.stdout, "STATE") {
		t.Fatalf("jobs table:\n%s", r.stdout)
	}
	r = must(t, ExitOK, "jobs", u, "--json", "--task", "mail", "--state", "queued,running")
	if page := decode[jobsPage](t, r); len(page.Jobs) != 2 {
		t.Fatalf("task filter: %d jobs, want 2", len(page.Jobs))
	}

	// cancel and retry
	r = must(t, ExitOK, "cancel", j.ID, u, "--reason", "operator said so")
	if !strings.Contains(r.stdout, "cancelled "+j.ID) {
		t.Fatalf("cancel printed %q", r.stdout)
	}
	must(t, ExitOK, "cancel", j.ID, u)
	r = must(t, ExitOK, "jobs", "get", j.ID, u, "--json")
	if d := decode[jobDetail](t, r); d.Job.State != core.StateCancelled || d.Job.LastError != "operator said so" {
		t.Fatalf("after cancel: %+v", d.Job)
	}
	must(t, ExitNotFound, "cancel", "01JUNKJUNKJUNKJUNKJUNKJUNK", u)
	must(t, ExitOK, "retry", j.ID, u)
	must(t, ExitRefused, "retry", j.ID, u) // queued now
	r = must(t, ExitNotFound, "cancel", ids[0], "01JUNKJUNKJUNKJUNKJUNKJUNK", ids[1], u, "--json")
	outs := decode[[]jobOutcome](t, r)
	if len(outs) != 3 || outs[0].Job == nil || outs[1].Error == "" || outs[2].Job == nil {
		t.Fatalf("cancel of three: %+v", outs)
	}
	must(t, ExitNotFound, "cancel", "01JUNKJUNKJUNKJUNKJUNKJUNK", ids[2], u)
	// The exit code is that of the first failure: refused (queued), then not found.
	must(t, ExitRefused, "retry", ids[3], "01JUNKJUNKJUNKJUNKJUNKJUNK", u)

	// stats per queue and per task; pause and resume
	r = must(t, ExitOK, "stats", u)
	if !strings.Contains(r.stdout, "pages") || !strings.Contains(r.stdout, "QUEUE") {
		t.Fatalf("stats:\n%s", r.stdout)
	}
	r = must(t, ExitOK, "stats", u, "--json", "--queue", "pages")
	st := decode[statsOut](t, r)
	if len(st.Queues) != 1 || st.Queues[0].Jobs[core.StateQueued] != 2 || st.Queues[0].Jobs[core.StateCancelled] != 3 {
		t.Fatalf("stats --queue pages: %+v", st)
	}
	r = must(t, ExitOK, "stats", u, "--json", "--task", "page,mail")
	st = decode[statsOut](t, r)
	if len(st.Tasks) != 2 || st.Tasks[0].Jobs[core.StateQueued] != 2 {
		t.Fatalf("stats --task: %+v", st)
	}
	must(t, ExitOK, "stats", u, "--task", "page")
	r = must(t, ExitOK, "pause", "pages", "idle-queue", u)
	if !strings.Contains(r.stdout, "paused pages") {
		t.Fatalf("pause printed %q", r.stdout)
	}
	r = must(t, ExitOK, "stats", u, "--json", "--queue", "pages", "--queue", "idle-queue")
	st = decode[statsOut](t, r)
	if len(st.Queues) != 2 || !st.Queues[0].Paused || !st.Queues[1].Paused {
		t.Fatalf("after pause: %+v", st.Queues)
	}
	must(t, ExitOK, "resume", "pages", u, "--json")
	r = must(t, ExitOK, "stats", u, "--json", "--queue", "pages")
	if st := decode[statsOut](t, r); st.Queues[0].Paused {
		t.Fatalf("after resume: %+v", st.Queues)
	}
}
