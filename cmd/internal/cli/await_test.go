package cli

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestJobsGetShowsWait parks a job on two others and checks that jobs get
// prints its wait, in text and in JSON, on every store that keeps waits.
func TestJobsGetShowsWait(t *testing.T) {
	n := 0
	for _, o := range opsTargets(t) {
		aw, ok := o.be.(core.Awaiter)
		if !ok {
			continue
		}
		n++
		t.Run(o.name, func(t *testing.T) {
			ctx := context.Background()
			res, err := o.be.Enqueue(ctx, []core.EnqueueRequest{
				{Queue: "kids", Task: "part"}, {Queue: "kids", Task: "part"}, {Queue: "gather", Task: "gather"},
			})
			if err != nil {
				t.Fatal(err)
			}
			js, err := o.be.Claim(ctx, core.ClaimRequest{Queue: "gather", WorkerID: "w-cli", Limit: 1, LeaseTTL: time.Hour})
			if err != nil || len(js) != 1 {
				t.Fatalf("claim: %d %v", len(js), err)
			}
			until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
			if _, err := aw.AwaitJobs(ctx, core.AwaitRequest{Lease: js[0].Lease, JobIDs: []string{res[0].Job.ID, res[1].Job.ID}, Mode: core.AwaitAny, Until: until}); err != nil {
				t.Fatal(err)
			}
			r := o.must(t, ExitOK, "jobs", "get", js[0].ID)
			if !regexp.MustCompile(`(?m)^wait:\s+waiting on 2 of 2 jobs \(any\), until ` + regexp.QuoteMeta(until.Format(time.RFC3339)) + `$`).MatchString(r.stdout) {
				t.Errorf("jobs get of a waiting job:\n%s", r.stdout)
			}
			d := decode[jobDetail](t, o.must(t, ExitOK, "jobs", "get", js[0].ID, "--json"))
			if d.Wait == nil || len(d.Wait.JobIDs) != 2 || d.Wait.Mode != core.AwaitAny || d.Wait.Pending != 2 {
				t.Errorf("jobs get --json wait: %+v", d.Wait)
			}
			if r := o.must(t, ExitOK, "jobs", "get", res[0].Job.ID); regexp.MustCompile(`(?m)^wait:`).MatchString(r.stdout) {
				t.Errorf("a job that never waited shows a wait:\n%s", r.stdout)
			}
		})
	}
	if n == 0 {
		t.Fatal("no store of the tests keeps waits (backend-mem should)")
	}
}
