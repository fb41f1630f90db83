package natsq_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go/jetstream"
)

// offClock is a process clock an offset away from true time.
type offClock time.Duration

func (c offClock) Now() time.Time { return time.Now().Add(time.Duration(c)).UTC() }

// TestServerTime: without a DecisionClock, creation, due and lease times
// come from the server's timestamps, whatever the process clock says.
func TestServerTime(t *testing.T) {
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(off.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			nc := connect(t, embeddedURL(t))
			b := newBackend(t, nc, natsq.Options{Namespace: namespace("srvtime"), Clock: offClock(off)})
			// Allow for the clock granularity of the server, which shares
			// this machine.
			const slack = 50 * time.Millisecond
			before := time.Now()
			res, err := b.Enqueue(ctx, []core.EnqueueRequest{
				{Queue: "q", Task: "t"},
				{Queue: "q", Task: "t", RunAt: before.Add(1500 * time.Millisecond)},
			})
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			now := res[0].Job
			if now.CreatedAt.Before(before.Add(-slack)) || now.CreatedAt.After(after.Add(slack)) || !now.RunAt.Equal(now.CreatedAt) {
				t.Fatalf("created %v, run at %v; want the server's time, within [%v, %v]", now.CreatedAt, now.RunAt, before, after)
			}
			if got := res[1].Job.RunAt; !got.Equal(before.Add(1500 * time.Millisecond).UTC().Truncate(time.Microsecond)) {
				t.Fatalf("requested run at kept as %v", got)
			}
			before = time.Now()
			jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10, LeaseTTL: 30 * time.Second})
			if err != nil || len(jobs) != 1 || jobs[0].ID != now.ID {
				t.Fatalf("claim = %d jobs, %v; want the one due now", len(jobs), err)
			}
			after = time.Now()
			exp := jobs[0].Lease.ExpiresAt
			if exp.Before(before.Add(30*time.Second-slack)) || exp.After(after.Add(30*time.Second+slack)) {
				t.Fatalf("lease expires %v; want 30s after the server's time, within [%v, %v]", exp, before, after)
			}
			rr, err := b.Rescue(ctx, core.RescueRequest{Limit: 10})
			if err != nil || rr.Total() != 0 {
				t.Fatalf("rescue of a live lease = %+v, %v", rr, err)
			}
			// The delayed job becomes claimable when the server's time
			// reaches its run-at, not before.
			for {
				jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) == 1 {
					if time.Now().Before(res[1].Job.RunAt) || jobs[0].FirstStartedAt.Before(res[1].Job.RunAt) {
						t.Fatalf("delayed job claimed at %v (started %v), before its run-at %v", time.Now(), jobs[0].FirstStartedAt, res[1].Job.RunAt)
					}
					break
				}
				if time.Since(before) > 10*time.Second {
					t.Fatal("the delayed job never became claimable")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestFailStop: a log message the backend cannot decode (a bulk step
// among them), a command of a newer version than it applies, or a bulk
// step of an action it does not know stops every replica of the namespace
// with an error wrapping core.ErrInvalidState (core.ErrUnsupported for
// the newer command and the unknown action); it is never skipped, and a
// new replica refuses to start.
func TestFailStop(t *testing.T) {
	t.Parallel()
	url := embeddedURL(t)
	for name, tc := range map[string]struct {
		data func(jobID string) string
		want error
	}{
		"undecodable": {func(string) string { return "{not a command" }, core.ErrInvalidState},
		"newer version": {func(id string) string {
			return fmt.Sprintf(`{"op":"delete_job","v":99,"o":"x","r":1,"job_id":%q}`, id)
		}, core.ErrUnsupported},
		"bulk step of a newer version": {func(id string) string {
			return fmt.Sprintf(`{"op":"bulk","v":99,"o":"x","r":1,"bulk":{"action":"cancel","ids":[%q]}}`, id)
		}, core.ErrUnsupported},
		"bulk step of an unknown action": {func(id string) string {
			return fmt.Sprintf(`{"op":"bulk","v":6,"o":"x","r":1,"bulk":{"action":"archive","ids":[%q]}}`, id)
		}, core.ErrUnsupported},
		"bulk step without a body": {func(string) string { return `{"op":"bulk","v":6,"o":"x","r":1}` }, core.ErrInvalidState},
		"undecodable bulk step": {func(string) string {
			return `{"op":"bulk","v":6,"o":"x","r":1,"bulk":{"action":"cancel","ids":7}}`
		}, core.ErrInvalidState},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			nc := connect(t, url)
			ns := namespace("failstop")
			b := newBackend(t, nc, natsq.Options{Namespace: ns})
			res, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t"}})
			if err != nil {
				t.Fatal(err)
			}
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.Publish(ctx, "boson."+ns+".log", []byte(tc.data(res[0].Job.ID))); err != nil {
				t.Fatal(err)
			}
			_, err = b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "q", Task: "t"}})
			if !errors.Is(err, tc.want) {
				t.Fatalf("enqueue after the command = %v, want an error wrapping %v", err, tc.want)
			}
			if _, err := b.GetJob(ctx, res[0].Job.ID); !errors.Is(err, tc.want) {
				t.Fatalf("read after the replica stopped = %v, want %v", err, tc.want)
			}
			fresh, err := natsq.New(ctx, connect(t, url), natsq.Options{Namespace: ns})
			if err == nil {
				fresh.Close()
				t.Fatal("a new replica started on a log it cannot apply")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("New on the log = %v, want %v", err, tc.want)
			}
		})
	}
}
