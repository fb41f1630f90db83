package redisq

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// The flow multi-process test: worker processes claim from two queues of
// one task under a task limit, a per-key limit and sequences, and keep
// witnesses in Redis while they hold a job (incremented after the claim
// returned, decremented before the completion is sent, so a witness never
// counts more than the store holds running). A witness above its limit,
// or a sequence whose jobs start out of id order, is a violation.
const (
	flowTask     = "ft"
	flowMax      = 6
	flowPerKey   = 2
	flowJobs     = 1200
	flowKeys     = 8
	flowSeqs     = 4
	flowOneSlot  = "BOSON_REDISQ_WORKER_ONESLOT"
	flowProcs    = 3
	flowWitness  = "witness"
	flowHoldTime = 200 * time.Microsecond
)

var flowQueues = []string{"fa", "fb"}

func flowClient(target string) (redis.UniversalClient, error) {
	if strings.HasPrefix(target, "redis://") {
		opt, err := redis.ParseURL(target)
		if err != nil {
			return nil, err
		}
		return redis.NewClient(opt), nil
	}
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(target, ",")}), nil
}

// flowWorkerMain works the flow queues until no job is left, then prints
// how many jobs it completed and the violations it saw.
func flowWorkerMain() int {
	ctx := context.Background()
	client, err := flowClient(os.Getenv(workerAddrsEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer client.Close()
	prefix := os.Getenv(workerPrefix)
	b, err := New(client, Options{Prefix: prefix, OneSlot: os.Getenv(flowOneSlot) != ""})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer b.Close()
	// the witnesses share the prefix's slot, so that one MULTI covers them
	wk := func(name string) string { return "{" + prefix + "}:" + flowWitness + ":" + name }
	worker := fmt.Sprintf("w%d", os.Getpid())
	completed := 0
	var violations []string
	for idle := 0; idle < 200; {
		got := 0
		for _, q := range flowQueues {
			jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: q, WorkerID: worker, Limit: 4, LeaseTTL: 5 * time.Minute})
			if err != nil {
				fmt.Fprintln(os.Stderr, "claim:", err)
				return 2
			}
			got += len(jobs)
			for _, j := range jobs {
				names := []string{"task", "key:" + j.LimitKey}
				limits := []int64{flowMax, flowPerKey}
				if j.SequenceKey != "" {
					names = append(names, "seq:"+q+":"+j.SequenceKey)
					limits = append(limits, 1)
				}
				for i, n := range names {
					v, err := client.Incr(ctx, wk(n)).Result()
					if err != nil {
						fmt.Fprintln(os.Stderr, "witness:", err)
						return 2
					}
					if v > limits[i] {
						violations = append(violations, fmt.Sprintf("%s at %d", n, v))
					}
				}
				if j.SequenceKey != "" {
					last, err := client.GetSet(ctx, wk("last:"+q+":"+j.SequenceKey), j.ID).Result()
					if err != nil && err != redis.Nil {
						fmt.Fprintln(os.Stderr, "witness:", err)
						return 2
					}
					if last >= j.ID {
						violations = append(violations, fmt.Sprintf("sequence %s started %s after %s", j.SequenceKey, j.ID, last))
					}
				}
				time.Sleep(flowHoldTime)
				for _, n := range names {
					if err := client.Decr(ctx, wk(n)).Err(); err != nil {
						fmt.Fprintln(os.Stderr, "witness:", err)
						return 2
					}
				}
				errs, err := b.Complete(ctx, []core.Completion{{Lease: j.Lease}})
				if err != nil || errs[0] != nil {
					fmt.Fprintln(os.Stderr, "complete:", err, errs)
					return 2
				}
				completed++
			}
		}
		if got > 0 {
			idle = 0
			continue
		}
		counts, err := b.CountJobs(ctx, core.JobFilter{Task: flowTask, States: []core.JobState{core.StateQueued, core.StateRunning}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "count:", err)
			return 2
		}
		if counts[core.StateQueued] == 0 && counts[core.StateRunning] == 0 {
			break
		}
		idle++
		time.Sleep(2 * time.Millisecond)
	}
	fmt.Printf("completed=%d violations=%d %s\n", completed, len(violations), strings.Join(violations, "; "))
	return 0
}

// TestMultiProcessFlowLimits: three worker processes never exceed the
// task limit, the per-key limit or a sequence's one at a time, start each
// sequence in id order, and together complete every job.
func TestMultiProcessFlowLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	t.Run("standalone", func(t *testing.T) {
		flowMultiProcess(t, standaloneClient(t), standaloneURL(t), false)
	})
	t.Run("cluster", func(t *testing.T) {
		c := clusterClient(t)
		var addrs []string
		for _, s := range testCluster.c.servers {
			addrs = append(addrs, s.addr())
		}
		flowMultiProcess(t, c, strings.Join(addrs, ","), true)
	})
}

func flowMultiProcess(t *testing.T, c redis.UniversalClient, target string, oneSlot bool) {
	ctx := context.Background()
	b := newBackend(t, c, Options{OneSlot: oneSlot})
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: flowTask, MaxRunning: flowMax, MaxRunningPerKey: flowPerKey}); err != nil {
		t.Fatal(err)
	}
	reqs := make([]core.EnqueueRequest, 0, flowJobs)
	for i := range flowJobs {
		r := core.EnqueueRequest{Queue: flowQueues[i%2], Task: flowTask, LimitKey: fmt.Sprintf("k%d", i%flowKeys)}
		if i%3 == 0 {
			r.SequenceKey = fmt.Sprintf("s%d", i%flowSeqs)
		}
		reqs = append(reqs, r)
	}
	for i := 0; i < len(reqs); i += 300 {
		if _, err := b.Enqueue(ctx, reqs[i:i+300]); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{workerEnv + "=flow", workerAddrsEnv + "=" + target, workerPrefix + "=" + b.opts.Prefix}
	if oneSlot {
		env = append(env, flowOneSlot+"=1")
	}
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, flowProcs)
	errs := make([]error, flowProcs)
	for p := range flowProcs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env...)
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
	for p := range flowProcs {
		if errs[p] != nil {
			t.Fatalf("worker %d: %v\n%s", p, errs[p], outs[p].String())
		}
		var done, bad int
		if _, err := fmt.Sscanf(strings.TrimSpace(outs[p].String()), "completed=%d violations=%d", &done, &bad); err != nil {
			t.Fatalf("worker %d output %q: %v", p, outs[p].String(), err)
		}
		if bad != 0 {
			t.Errorf("worker %d: %s", p, outs[p].String())
		}
		total += done
	}
	if total != flowJobs {
		for _, q := range flowQueues {
			keys := b.ks.queueKeys(q)
			g, _ := c.ZCard(ctx, keys[kGate]).Result()
			w, _ := c.ZRange(ctx, keys[kSeqw], 0, 3).Result()
			h, _ := c.HGetAll(ctx, keys[kSeqh]).Result()
			fl, _ := c.HGetAll(ctx, keys[kFlow]).Result()
			rd, _ := c.ZCard(ctx, keys[kReady]).Result()
			sc, _ := c.ZCard(ctx, keys[kSched]).Result()
			t.Logf("%s: gate %d ready %d sched %d seqw %v seqh %v flow %v", q, g, rd, sc, w, h, fl)
			for _, id := range h {
				j, err := b.GetJob(ctx, id)
				t.Logf("head %s: %v %v", id, j.State, err)
			}
		}
		t.Fatalf("workers completed %d jobs, want %d", total, flowJobs)
	}
	counts, err := b.CountJobs(ctx, core.JobFilter{Task: flowTask})
	if err != nil {
		t.Fatal(err)
	}
	if counts[core.StateSucceeded] != flowJobs || len(counts) != 1 {
		t.Fatalf("counts %v", counts)
	}
	// Nothing is left behind: no running count above zero, no gate, no
	// sequence head.
	keys := b.ks.queueKeys(flowQueues[0])
	for _, k := range []int{kFlow, kGate, kGatet, kSeqh, kSeqw} {
		n, err := c.Exists(ctx, keys[k]).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 && k != kFlow {
			t.Errorf("%s is left", keys[k])
		}
		if k == kFlow {
			m, err := c.HGetAll(ctx, keys[k]).Result()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range m {
				// start windows ("r…") and the hash's own fields ("~…", see
				// flush) are not running counts
				if !strings.HasPrefix(f, "r") && !strings.HasPrefix(f, "~") && v != "0" {
					t.Errorf("flow count %s = %s is left", f, v)
				}
			}
		}
	}
}
