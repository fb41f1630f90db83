package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// flowTargets returns the stores of opsTargets whose backend enforces
// flow control.
func flowTargets(t *testing.T) []opsTarget {
	t.Helper()
	var out []opsTarget
	for _, o := range opsTargets(t) {
		if _, ok := o.be.(core.FlowController); ok {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		t.Fatal("no store of the tests enforces flow control (backend-mem should)")
	}
	return out
}

// TestFlowCommands sets flow limits with config, claims under them, and
// checks that stats shows running jobs against the limits with the
// busiest keys, that jobs and bulk select by limit and sequence key, and
// that jobs get shows the flow fields.
func TestFlowCommands(t *testing.T) {
	for _, o := range flowTargets(t) {
		t.Run(o.name, func(t *testing.T) {
			ctx := context.Background()
			o.must(t, ExitOK, "config", "task", "tenant", "--max-running", "10", "--max-running-per-key", "2", "--max-starts-per-second", "50", "--hold-sequence-on-failure")
			cfg := decode[core.TaskConfig](t, o.must(t, ExitOK, "config", "task", "tenant", "--json"))
			if cfg != (core.TaskConfig{Task: "tenant", MaxRunning: 10, MaxRunningPerKey: 2, MaxStartsPerSecond: 50, HoldSequenceOnFailure: true}) {
				t.Fatalf("task config %+v", cfg)
			}
			// Changing one field keeps the others.
			o.must(t, ExitOK, "config", "task", "tenant", "--max-starts-per-second", "0")
			if c, err := o.be.GetTaskConfig(ctx, "tenant"); err != nil || c.MaxStartsPerSecond != 0 || c.MaxRunningPerKey != 2 || !c.HoldSequenceOnFailure {
				t.Fatalf("stored task config %+v %v", c, err)
			}
			o.must(t, ExitOK, "config", "queue", "work", "--max-running", "4")
			if r := o.must(t, ExitOK, "config", "queue", "work"); !regexp.MustCompile(`(?m)^max running:\s+4$`).MatchString(r.stdout) {
				t.Fatalf("config queue work:\n%s", r.stdout)
			}

			var reqs []core.EnqueueRequest
			for _, k := range []string{"acme", "acme", "acme", "beta", ""} {
				reqs = append(reqs, core.EnqueueRequest{Queue: "work", Task: "tenant", LimitKey: k})
			}
			for i := 0; i < 3; i++ {
				reqs = append(reqs, core.EnqueueRequest{Queue: "seq", Task: "ship", SequenceKey: "order-1"})
			}
			res, err := o.be.Enqueue(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			js, err := o.be.Claim(ctx, core.ClaimRequest{Queue: "work", WorkerID: "w-cli", Limit: 10, LeaseTTL: time.Hour})
			if err != nil || len(js) != 4 {
				t.Fatalf("claim under the limits: %d %v", len(js), err)
			}

			r := o.must(t, ExitOK, "stats")
			for _, want := range []string{`queue work\s+4 of 4 \(at limit\)\s+4`, `task tenant\s+4 of 10\s+10\s+2\s+-\s+-\s+acme=2 \(at limit\), beta=1`} {
				if !regexp.MustCompile(want).MatchString(r.stdout) {
					t.Errorf("stats: no line like %q in\n%s", want, r.stdout)
				}
			}
			type statsJSON struct{ Limits []flowLimit }
			ls := decode[statsJSON](t, o.must(t, ExitOK, "stats", "--task", "tenant", "--json")).Limits
			if len(ls) != 1 || ls[0].Name != "tenant" || ls[0].Running != 4 || ls[0].AtLimit || len(ls[0].BusiestKeys) != 2 ||
				ls[0].BusiestKeys[0] != (core.KeyCount{Key: "acme", Running: 2}) {
				t.Fatalf("stats --task tenant --json limits: %+v", ls)
			}

			type page struct{ Jobs []core.Job }
			acme := decode[page](t, o.must(t, ExitOK, "jobs", "--limit-key", "acme", "--json")).Jobs
			if len(acme) != 3 || acme[0].ID != res[0].Job.ID || acme[2].ID != res[2].Job.ID {
				t.Fatalf("jobs of acme: %+v", acme)
			}
			seq := decode[page](t, o.must(t, ExitOK, "jobs", "--queue", "seq", "--sequence-key", "order-1", "--json")).Jobs
			if len(seq) != 3 || seq[0].ID != res[5].Job.ID || seq[1].ID != res[6].Job.ID || seq[2].ID != res[7].Job.ID {
				t.Fatalf("sequence order-1: %+v", seq)
			}
			if r := o.must(t, ExitOK, "jobs", "get", res[6].Job.ID); !regexp.MustCompile(`(?m)^sequence key:\s+order-1$`).MatchString(r.stdout) {
				t.Fatalf("jobs get:\n%s", r.stdout)
			}
			if r := o.must(t, ExitOK, "jobs", "get", res[3].Job.ID); !regexp.MustCompile(`(?m)^limit key:\s+beta$`).MatchString(r.stdout) {
				t.Fatalf("jobs get:\n%s", r.stdout)
			}
			o.must(t, ExitOK, "bulk", "cancel", "--limit-key", "acme", "--state", "queued")
			if j, err := o.be.GetJob(ctx, res[2].Job.ID); err != nil || j.State != core.StateCancelled {
				t.Fatalf("queued acme job after bulk cancel: %+v %v", j, err)
			}
			if c, _ := o.be.CountJobs(ctx, core.JobFilter{Queue: "work", States: []core.JobState{core.StateCancelled}}); c[core.StateCancelled] != 1 {
				t.Fatalf("bulk cancel by key cancelled %d jobs, want 1", c[core.StateCancelled])
			}
			if strings.Contains(o.must(t, ExitOK, "stats", "--queue", "seq").stdout, "queue seq") {
				t.Fatal("stats lists an unlimited queue as limited")
			}
		})
	}
}
