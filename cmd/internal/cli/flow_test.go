package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// noFlow shows a backend's base contract, search and task listing, but
// not flow control: a store that searches but does not enforce limits.
type noFlow struct {
	core.QueueBackend
	core.JobSearcher
	core.TaskLister
}

// TestConfigWithoutFlowControl sets and shows configs on a store without
// flow control: the other fields are stored, a flow limit exits 6 and
// changes nothing, an invalid value exits 2 naming its flag, and the
// searches by flow key exit 6 instead of ignoring the key.
func TestConfigWithoutFlowControl(t *testing.T) {
	m := mem.New(mem.Options{})
	t.Cleanup(func() { _ = m.Close() })
	o := opsTarget{name: "noflow", be: noFlow{m, m, m}}
	ctx := context.Background()
	seedJobs(t, m, "q", "t", "acme", 3)

	o.must(t, ExitNotFound, "config", "task", "t")
	o.must(t, ExitOK, "config", "task", "t", "--max-in-flight", "5", "--priority", "3")
	if r := o.must(t, ExitOK, "config", "task", "t"); !regexp.MustCompile(`(?m)^max in flight:\s+5$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^max running:\s+none$`).MatchString(r.stdout) {
		t.Fatalf("config task t:\n%s", r.stdout)
	}
	for _, c := range []struct {
		code int
		want string
		args []string
	}{
		{ExitUnsupported, "flow control", []string{"config", "task", "t", "--max-running", "2"}},
		{ExitUnsupported, "flow control", []string{"config", "task", "t", "--hold-sequence-on-failure"}},
		{ExitUnsupported, "flow control", []string{"config", "queue", "q", "--max-running", "2"}},
		{ExitUsage, "--max-running: -1 must lie in [0, 1000000]", []string{"config", "task", "t", "--max-running", "-1"}},
		{ExitUsage, "--max-starts-per-second-per-key: 1000001", []string{"config", "task", "t", "--max-starts-per-second-per-key", "1000001"}},
		{ExitUsage, "--max-running: -2", []string{"config", "queue", "q", "--max-running", "-2"}},
		{ExitUsage, "--max-running-per-key does not apply to a queue", []string{"config", "queue", "q", "--max-running-per-key", "1"}},
		{ExitUsage, "--retention does not apply to a task", []string{"config", "task", "t", "--retention", "1h"}},
		{ExitUsage, "invalid", []string{"config", "task", "t", "--max-running", "two"}},
		{ExitUsage, "config takes task TASK or queue QUEUE", []string{"config", "task"}},
		{ExitUsage, "unknown config kind", []string{"config", "worker", "w"}},
		{ExitUsage, "task", []string{"config", "task", "bad name"}},
		{ExitUnsupported, "flow control", []string{"jobs", "--limit-key", "acme"}},
		{ExitUnsupported, "flow control", []string{"jobs", "--queue", "q", "--sequence-key", "s"}},
		{ExitUnsupported, "flow control", []string{"bulk", "cancel", "--limit-key", "acme"}},
		{ExitUsage, "limit_key", []string{"jobs", "--limit-key", "a b"}},
	} {
		r := o.must(t, c.code, c.args...)
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("boson %s: stderr %q, want %q", strings.Join(c.args, " "), r.stderr, c.want)
		}
	}
	cfg, err := m.GetTaskConfig(ctx, "t")
	if err != nil || cfg != (core.TaskConfig{Task: "t", MaxInFlight: 5, Priority: 3}) {
		t.Fatalf("stored task config %+v %v", cfg, err)
	}
	if c, _ := m.CountJobs(ctx, core.JobFilter{Queue: "q"}); c[core.StateQueued] != 3 {
		t.Fatalf("refused commands changed jobs: %v", c)
	}

	// Queue settings keep the paused flag.
	o.must(t, ExitOK, "pause", "q")
	o.must(t, ExitOK, "config", "queue", "q", "--retention", "36h", "--cleanup-limit", "7")
	qc := decode[core.QueueConfig](t, o.must(t, ExitOK, "config", "queue", "q", "--json"))
	if qc != (core.QueueConfig{Queue: "q", Paused: true, RetentionTTL: 36 * time.Hour, CleanupLimit: 7}) {
		t.Fatalf("queue config %+v", qc)
	}
	// Without flow control, stats shows no limits table.
	if r := o.must(t, ExitOK, "stats"); strings.Contains(r.stdout, "LIMITED") {
		t.Fatalf("stats without flow control:\n%s", r.stdout)
	}
}
