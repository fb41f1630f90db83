package redisq

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// infoFields returns the "name:value" lines of INFO sections.
func infoFields(tb testing.TB, c *redis.Client, sections ...string) map[string]string {
	tb.Helper()
	info, err := c.Info(context.Background(), sections...).Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if name, val, ok := strings.Cut(line, ":"); ok {
			out[name] = val
		}
	}
	return out
}

// statField returns a field ("calls", "usec") of an INFO commandstats value.
func statField(val, field string) float64 {
	for _, f := range strings.Split(val, ",") {
		if v, ok := strings.CutPrefix(f, field+"="); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	return 0
}

// scriptCalls returns how many FCALL and EVALSHA or EVAL calls a server has
// served.
func scriptCalls(t *testing.T, c *redis.Client) (fcall, eval int64) {
	t.Helper()
	f := infoFields(t, c, "commandstats")
	fcall = int64(statField(f["cmdstat_fcall"], "calls"))
	eval = int64(statField(f["cmdstat_evalsha"], "calls") + statField(f["cmdstat_eval"], "calls"))
	return fcall, eval
}

// TestScriptModes runs a job through enqueue, claim, heartbeat and complete
// on private servers: with the default mode the scripts run as Functions;
// forced to EVALSHA, and on servers that refuse FUNCTION or FCALL, they run
// as scripts, and the job's life is the same.
func TestScriptModes(t *testing.T) {
	requireServerBinary(t, testreq.RedisServer)
	for _, tc := range []struct {
		name      string
		mode      ScriptMode
		args      []string
		functions bool
	}{
		{name: "functions", functions: true},
		{name: "forced eval", mode: ScriptsEval},
		{name: "FUNCTION refused", args: []string{"--rename-command", "FUNCTION", ""}},
		{name: "FCALL refused", args: []string{"--rename-command", "FCALL", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := startServer(t.TempDir(), tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.stop)
			c := redis.NewClient(&redis.Options{Addr: srv.addr()})
			t.Cleanup(func() { c.Close() })
			clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
			b := newBackend(t, c, Options{Clock: clock, Scripts: tc.mode})
			ctx := context.Background()
			j := b.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "t", Payload: []byte("p")})
			jobs := b.mustClaim(t, "q", 10)
			if len(jobs) != 1 || jobs[0].ID != j.ID {
				t.Fatalf("claimed %+v", jobs)
			}
			l, err := b.Heartbeat(ctx, jobs[0].Lease, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if errs, err := b.Complete(ctx, []core.Completion{{Lease: l, Result: []byte("r")}}); err != nil || errs[0] != nil {
				t.Fatalf("complete: %v %v", errs, err)
			}
			got, err := b.GetJob(ctx, j.ID)
			if err != nil || got.State != core.StateSucceeded || string(got.Result) != "r" {
				t.Fatalf("job %+v %v", got, err)
			}
			fcall, eval := scriptCalls(t, c)
			if tc.functions {
				if fcall < 4 || eval != 0 || !b.functions.Load() {
					t.Fatalf("%d FCALL, %d EVAL/EVALSHA calls, functions %v: want only FCALL", fcall, eval, b.functions.Load())
				}
				libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: libraryName}).Result()
				if err != nil || len(libs) != 1 || len(libs[0].Functions) != len(allScripts) {
					t.Fatalf("library: %+v %v", libs, err)
				}
				return
			}
			// One FCALL may have found no function before FUNCTION LOAD was
			// refused.
			if fcall > 1 || eval < 4 || b.functions.Load() {
				t.Fatalf("%d FCALL, %d EVAL/EVALSHA calls, functions %v: want scripts", fcall, eval, b.functions.Load())
			}
		})
	}
	if _, err := New(standaloneClient(t), Options{Scripts: 7}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("New with an unknown script mode: %v", err)
	}
}

// TestLibraryReloaded: a server that lost the library (a restart without
// persistence, FUNCTION FLUSH) gets it again on the next call.
func TestLibraryReloaded(t *testing.T) {
	c := standaloneClient(t)
	b := newBackend(t, c, Options{})
	b.mustEnqueue(t, core.EnqueueRequest{Queue: "q", Task: "t"})
	ctx := context.Background()
	if err := c.FunctionDelete(ctx, libraryName).Err(); err != nil {
		t.Fatal(err)
	}
	if jobs := b.mustClaim(t, "q", 1); len(jobs) != 1 {
		t.Fatalf("claimed %d", len(jobs))
	}
	if !b.functions.Load() {
		t.Fatal("the backend left Functions after a missing library")
	}
}
