package redisq

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// The multi-process test re-executes the test binary as worker processes;
// these variables tell a process that it is one.
const (
	workerEnv      = "BOSON_REDISQ_WORKER"
	workerAddrsEnv = "BOSON_REDISQ_WORKER_ADDRS" // comma-separated cluster addresses, or a URL
	workerPrefix   = "BOSON_REDISQ_WORKER_PREFIX"
)

const mpQueue = "mp"

// workerMain works the queue until no job is left, then prints how many
// jobs it completed and how many fenced calls it lost.
func workerMain() int {
	if os.Getenv(workerEnv) == "flow" {
		return flowWorkerMain()
	}
	ctx := context.Background()
	var client redis.UniversalClient
	target := os.Getenv(workerAddrsEnv)
	if strings.HasPrefix(target, "redis://") {
		opt, err := redis.ParseURL(target)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		client = redis.NewClient(opt)
	} else {
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(target, ",")})
	}
	defer client.Close()
	b, err := New(client, Options{Prefix: os.Getenv(workerPrefix)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer b.Close()
	worker := "w" + strconv.Itoa(os.Getpid())
	completed, lost := 0, 0
	for {
		jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: mpQueue, WorkerID: worker, Limit: 25, LeaseTTL: 5 * time.Minute})
		if err != nil {
			fmt.Fprintln(os.Stderr, "claim:", err)
			return 2
		}
		if len(jobs) == 0 {
			counts, err := b.CountJobs(ctx, core.JobFilter{Queue: mpQueue, States: []core.JobState{core.StateQueued}})
			if err != nil {
				fmt.Fprintln(os.Stderr, "count:", err)
				return 2
			}
			if counts[core.StateQueued] == 0 {
				break
			}
			continue
		}
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease, Result: []byte(worker)}
		}
		errs, err := b.Complete(ctx, items)
		if err != nil {
			fmt.Fprintln(os.Stderr, "complete:", err)
			return 2
		}
		for _, e := range errs {
			if e != nil {
				lost++
			} else {
				completed++
			}
		}
	}
	fmt.Printf("completed=%d lost=%d\n", completed, lost)
	return 0
}

func TestMultiProcessExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	t.Run("standalone", func(t *testing.T) {
		c := standaloneClient(t)
		multiProcess(t, c, standaloneURL(t))
	})
	t.Run("cluster", func(t *testing.T) {
		c := clusterClient(t)
		var addrs []string
		for _, s := range testCluster.c.servers {
			addrs = append(addrs, s.addr())
		}
		multiProcess(t, c, strings.Join(addrs, ","))
	})
}

func multiProcess(t *testing.T, c redis.UniversalClient, target string) {
	const jobs, procs = 10_000, 3
	ctx := context.Background()
	b := newBackend(t, c, Options{})
	for n := 0; n < jobs; n += 1000 {
		reqs := make([]core.EnqueueRequest, 1000)
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: mpQueue, Task: "mp", Payload: []byte(strconv.Itoa(n + i))}
		}
		if _, err := b.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerEnv+"=1", workerAddrsEnv+"="+target, workerPrefix+"="+b.opts.Prefix)
		cmd.Stdout = &outs[p]
		cmd.Stderr = &outs[p]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = cmd.Wait()
		}()
	}
	wg.Wait()
	total := 0
	for p := range procs {
		if errs[p] != nil {
			t.Fatalf("worker %d: %v\n%s", p, errs[p], outs[p].String())
		}
		var done, lost int
		if _, err := fmt.Sscanf(strings.TrimSpace(outs[p].String()), "completed=%d lost=%d", &done, &lost); err != nil {
			t.Fatalf("worker %d output %q: %v", p, outs[p].String(), err)
		}
		if lost != 0 {
			t.Errorf("worker %d lost %d leases", p, lost)
		}
		if done == 0 {
			t.Errorf("worker %d completed nothing", p)
		}
		total += done
	}
	if total != jobs {
		t.Fatalf("workers completed %d jobs, want %d", total, jobs)
	}
	// Every job succeeded after exactly one claim with exactly one run.
	counts, err := b.CountJobs(ctx, core.JobFilter{Queue: mpQueue})
	if err != nil {
		t.Fatal(err)
	}
	if counts[core.StateSucceeded] != jobs || len(counts) != 1 {
		t.Fatalf("counts %v", counts)
	}
	stats, err := b.TaskStats(ctx, "mp")
	if err != nil {
		t.Fatal(err)
	}
	if stats.Runs[core.RunSucceeded] != jobs || len(stats.Runs) != 1 {
		t.Fatalf("run stats %v", stats.Runs)
	}
	seen := 0
	var ids []string
	payloads := map[string]bool{}
	f := core.JobFilter{Queue: mpQueue, Limit: core.MaxPageSize}
	for {
		page, err := b.ListJobs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			seen++
			ids = append(ids, j.ID)
			payloads[string(j.Payload)] = true
			if j.Attempt != 1 || j.Lease.Token != 1 || j.State != core.StateSucceeded || string(j.Result) != j.Lease.WorkerID {
				t.Fatalf("job %+v", j)
			}
		}
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	if seen != jobs || len(payloads) != jobs {
		t.Fatalf("listed %d jobs with %d payloads, want %d", seen, len(payloads), jobs)
	}
	// Every job's run records: exactly one run, succeeded, under token 1,
	// held by the job's record, and none moved to the run hash.
	keys := b.ks.queueKeys(mpQueue)
	pipe := c.Pipeline()
	recs := make([]*redis.StringCmd, len(ids))
	spilled := make([]*redis.BoolCmd, len(ids))
	for i, id := range ids {
		recs[i] = pipe.HGet(ctx, keys[kJob], id)
		spilled[i] = pipe.HExists(ctx, keys[kRun], id+"|1")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range recs {
		v, err := parseRecord(ids[i], cmd.Val())
		if err != nil {
			t.Fatal(err)
		}
		run, ok := lastRun(ids[i], v)
		if v.runCount != 1 || !ok || run.Status != core.RunSucceeded || run.Token != 1 || spilled[i].Val() {
			t.Fatalf("run records of %s: count %v, last run %+v, earlier run stored %v", ids[i], v.runCount, run, spilled[i].Val())
		}
	}
	// And through the API, for a sample.
	for _, id := range ids[:200] {
		runs, err := b.ListRuns(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].Status != core.RunSucceeded || runs[0].Token != 1 {
			t.Fatalf("runs of %s: %+v", id, runs)
		}
	}
}
