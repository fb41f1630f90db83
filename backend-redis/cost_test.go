package redisq

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// BenchmarkServerCost measures what the scripts cost the Redis server per
// job: each round enqueues 20,000 jobs in batches of 1,000, claims them 500
// at a time and completes them 500 at a time, then makes 1,000 single-job
// rounds of enqueue, claim, heartbeat and complete. For each phase it
// reports the median over rounds of the server's time inside script calls
// (INFO commandstats of EVALSHA, EVAL and FCALL) per job or call, and of
// the server's CPU (INFO cpu, user + system) per job.
//
// It runs on a private redis-server, or on BOSON_REDIS_COST_ADDR (for
// example a redis-server under valgrind --tool=callgrind
// --toggle-collect=evalShaCommand --toggle-collect=fcallCommand); with
// BOSON_REDIS_COST_CALLGRIND set to that server's pid, it zeroes the counts
// before each phase and dumps them after it, named by the phase.
// BOSON_REDIS_COST_JOBS sets the jobs per round (and a twentieth of them
// single-job rounds); BOSON_REDIS_COST_SCRIPTS=eval sends the scripts with
// EVALSHA instead of FCALL:
//
//	go test -run '^$' -bench ServerCost -benchtime 3x .
func BenchmarkServerCost(b *testing.B) {
	addr := os.Getenv("BOSON_REDIS_COST_ADDR")
	if addr == "" {
		requireServerBinary(b, testreq.RedisServer)
		srv, err := startServer(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(srv.stop)
		addr = srv.addr()
	}
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: time.Minute})
	b.Cleanup(func() { c.Close() })
	opts := Options{}
	if os.Getenv("BOSON_REDIS_COST_SCRIPTS") == "eval" {
		opts.Scripts = ScriptsEval
	}
	be := newBackend(b, c, opts)
	ctx := context.Background()
	pid := os.Getenv("BOSON_REDIS_COST_CALLGRIND")
	callgrind := func(args ...string) {
		if pid == "" {
			return
		}
		if out, err := exec.Command("callgrind_control", append(args, pid)...).CombinedOutput(); err != nil {
			b.Fatalf("callgrind_control %v: %v\n%s", args, err, out)
		}
	}

	perRound := 20_000
	if n, err := strconv.Atoi(os.Getenv("BOSON_REDIS_COST_JOBS")); err == nil && n > 0 {
		perRound = n
	}
	const batch, claim = 1000, 500
	type sample struct{ script, cpu float64 }
	results := map[string][]sample{}
	var order []string
	warm := true // the first round loads the code and is not counted
	measure := func(phase string, per int, work func()) {
		if warm {
			work()
			return
		}
		s0, u0 := serverStats(b, c)
		callgrind("-z")
		work()
		callgrind("--dump=" + phase)
		s1, u1 := serverStats(b, c)
		if results[phase] == nil {
			order = append(order, phase)
		}
		results[phase] = append(results[phase], sample{script: (s1 - s0) / float64(per), cpu: (u1 - u0) / float64(per)})
	}
	lease := time.Minute
	for round := -1; round < b.N; round++ {
		warm = round < 0
		jobs := perRound
		if warm {
			jobs = 20
		}
		singles := max(jobs/20, 1)
		q := "cost" + strconv.Itoa(round+1)
		var running []core.Job
		measure("enqueue", jobs, func() {
			for n := 0; n < jobs; n += batch {
				reqs := make([]core.EnqueueRequest, min(batch, jobs-n))
				for i := range reqs {
					reqs[i] = core.EnqueueRequest{Queue: q, Task: "t", Payload: []byte(`{"n":1}`)}
				}
				if _, err := be.Enqueue(ctx, reqs); err != nil {
					b.Fatal(err)
				}
			}
		})
		measure("claim", jobs, func() {
			for len(running) < jobs {
				got, err := be.Claim(ctx, core.ClaimRequest{Queue: q, WorkerID: "w", Limit: claim, LeaseTTL: lease})
				if err != nil || len(got) == 0 {
					b.Fatalf("claim: %d jobs, %v", len(got), err)
				}
				running = append(running, got...)
			}
		})
		measure("complete", jobs, func() {
			for n := 0; n < jobs; n += claim {
				items := make([]core.Completion, 0, claim)
				for _, j := range running[n:min(n+claim, jobs)] {
					items = append(items, core.Completion{Lease: j.Lease})
				}
				if _, err := be.Complete(ctx, items); err != nil {
					b.Fatal(err)
				}
			}
		})
		q1 := q + "s"
		var one []core.Job
		measure("enqueue-1", singles, func() {
			for range singles {
				if _, err := be.Enqueue(ctx, []core.EnqueueRequest{{Queue: q1, Task: "t", Payload: []byte(`{"n":1}`)}}); err != nil {
					b.Fatal(err)
				}
			}
		})
		measure("claim-1", singles, func() {
			for range singles {
				got, err := be.Claim(ctx, core.ClaimRequest{Queue: q1, WorkerID: "w", Limit: 1, LeaseTTL: lease})
				if err != nil || len(got) != 1 {
					b.Fatalf("claim: %d jobs, %v", len(got), err)
				}
				one = append(one, got...)
			}
		})
		measure("heartbeat-1", singles, func() {
			for i, j := range one {
				l, err := be.Heartbeat(ctx, j.Lease, lease)
				if err != nil {
					b.Fatal(err)
				}
				one[i].Lease = l
			}
		})
		measure("complete-1", singles, func() {
			for _, j := range one {
				if _, err := be.Complete(ctx, []core.Completion{{Lease: j.Lease}}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if _, err := be.Cleanup(ctx, core.CleanupRequest{FinishedBefore: time.Now().Add(time.Hour), Limit: 10_000}); err != nil {
			b.Fatal(err)
		}
	}
	for _, phase := range order {
		var script, cpu []float64
		for _, s := range results[phase] {
			script, cpu = append(script, s.script), append(cpu, s.cpu)
		}
		b.ReportMetric(median(script), phase+"-script-µs/op")
		b.ReportMetric(median(cpu), phase+"-cpu-µs/op")
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// serverStats returns the server's time inside script calls (µs, from
// INFO commandstats) and its CPU time (µs, user + system, from INFO cpu).
func serverStats(tb testing.TB, c *redis.Client) (script, cpu float64) {
	f := infoFields(tb, c, "commandstats", "cpu")
	for _, name := range []string{"cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall"} {
		script += statField(f[name], "usec")
	}
	for _, name := range []string{"used_cpu_user", "used_cpu_sys"} {
		n, _ := strconv.ParseFloat(f[name], 64)
		cpu += n * 1e6
	}
	return script, cpu
}
