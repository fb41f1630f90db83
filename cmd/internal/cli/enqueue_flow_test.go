package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// TestEnqueueFlowFlags spawns jobs with the flow flags on a store with flow
// control and checks the stored fields, the reuse of unique keys, and that
// contradictory or invalid flags exit 2 and store nothing; on a store
// without flow control every flow flag exits 6 and stores nothing.
func TestEnqueueFlowFlags(t *testing.T) {
	m := mem.New(mem.Options{})
	t.Cleanup(func() { _ = m.Close() })
	o := opsTarget{name: "mem", be: m}
	ctx := context.Background()
	enqueue := func(args ...string) core.EnqueueResult {
		t.Helper()
		return decode[core.EnqueueResult](t, o.must(t, ExitOK, append([]string{"enqueue", "--task", "t", "--queue", "q", "--json"}, args...)...))
	}

	j := enqueue("--limit-key", "acme", "--sequence-key", "order-1").Job
	if j.LimitKey != "acme" || j.SequenceKey != "order-1" {
		t.Fatalf("flow keys not stored: %+v", j)
	}
	first := enqueue("--unique", "while_active", "--key", "k1")
	if first.Job.Unique != core.UniqueWhileActive || first.Reused {
		t.Fatalf("while_active: %+v", first)
	}
	if again := enqueue("--unique", "while_active", "--key", "k1"); !again.Reused || again.Job.ID != first.Job.ID {
		t.Fatalf("same key while active not reused: %+v", again)
	}
	a := enqueue("--unique-args", "--payload", `{"b":1, "a":2}`)
	b := enqueue("--unique-args", "--payload", `{ "a":2,"b":1 }`)
	if !b.Reused || b.Job.ID != a.Job.ID || a.Job.IdempotencyKey == "" {
		t.Fatalf("unique args: %+v then %+v", a, b)
	}
	p := enqueue("--unique-period", "1h", "--key", "daily").Job
	if p.Unique != core.UniqueByPeriod || p.UniquePeriod != time.Hour {
		t.Fatalf("by period: %+v", p)
	}
	if r := enqueue("--unique", "until_retention", "--key", "plain").Job; r.Unique != core.UniqueUntilRetention {
		t.Fatalf("until_retention: %+v", r)
	}
	stored := func() int64 {
		c, err := m.CountJobs(ctx, core.JobFilter{Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		return c[core.StateQueued]
	}
	before := stored()

	refused := []struct {
		code int
		want string
		args []string
	}{
		{ExitUsage, `--unique "sometimes"`, []string{"--unique", "sometimes", "--key", "x"}},
		{ExitUsage, "needs --unique-period", []string{"--unique", "by_period", "--key", "x"}},
		{ExitUsage, "needs --unique by_period", []string{"--unique", "while_active", "--unique-period", "1h", "--key", "x"}},
		{ExitUsage, "needs --key or --unique-args", []string{"--unique", "while_active"}},
		{ExitUsage, "not both", []string{"--unique-args", "--key", "x"}},
		{ExitUsage, "limit_key", []string{"--limit-key", "a b"}},
		{ExitUsage, "sequence_key", []string{"--sequence-key", strings.Repeat("s", 300)}},
		{ExitUsage, "unique_period", []string{"--unique-period", "1ms", "--key", "x"}},
	}
	for _, c := range refused {
		r := o.must(t, c.code, append([]string{"enqueue", "--task", "t", "--queue", "q"}, c.args...)...)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("enqueue %s: stderr %q, want %q", strings.Join(c.args, " "), r.stderr, c.want)
		}
	}
	if n := stored(); n != before {
		t.Fatalf("refused enqueues stored jobs: %d queued, want %d", n, before)
	}

	nf := mem.New(mem.Options{})
	t.Cleanup(func() { _ = nf.Close() })
	no := opsTarget{name: "noflow", be: noFlow{nf, nf, nf}}
	for _, args := range [][]string{
		{"--limit-key", "acme"},
		{"--sequence-key", "s"},
		{"--unique", "while_active", "--key", "k"},
		{"--unique-period", "1h", "--key", "k"},
	} {
		r := no.must(t, ExitUnsupported, append([]string{"enqueue", "--task", "t", "--queue", "q"}, args...)...)
		if !strings.Contains(r.stderr, "flow control") {
			t.Errorf("noflow enqueue %s: stderr %q", strings.Join(args, " "), r.stderr)
		}
	}
	if c, _ := nf.CountJobs(ctx, core.JobFilter{Queue: "q"}); c[core.StateQueued] != 0 {
		t.Fatalf("a refused flow enqueue stored jobs: %v", c)
	}
	no.must(t, ExitOK, "enqueue", "--task", "t", "--queue", "q", "--unique-args")
}
