package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// TestFlowAcrossBackends drains keyed and sequenced jobs with workers on
// two backends (two engines, two pools) of one schema and checks, from
// what the workers hold, that no claim exceeds the task's limit or a
// key's, that a sequence never runs two jobs at once nor out of id
// order, and that every job succeeds exactly once.
func TestFlowAcrossBackends(t *testing.T) {
	const jobs, keys, perKey, perTask = 300, 5, 2, 6
	ctx := context.Background()
	url := sqltest.PostgresURL(t)
	pool := sqltest.Pool(t, url, 4)
	schema := sqltest.Schema(t, pool)
	var backends []*postgres.Backend
	for range 2 {
		b, err := postgres.New(sqltest.Pool(t, url, 4), postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		backends = append(backends, b)
	}
	if err := backends[0].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := backends[0].PutTaskConfig(ctx, core.TaskConfig{Task: "t", MaxRunning: perTask, MaxRunningPerKey: perKey}); err != nil {
		t.Fatal(err)
	}
	var reqs []core.EnqueueRequest
	for i := range jobs {
		r := core.EnqueueRequest{Queue: "q", Task: "t", LimitKey: fmt.Sprintf("k%d", i%keys)}
		if i%4 == 0 {
			r = core.EnqueueRequest{Queue: "q", Task: "s", SequenceKey: fmt.Sprintf("s%d", i%3)}
		}
		reqs = append(reqs, r)
	}
	res, err := backends[1].Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	running := map[string]int{}    // "task", key, sequence -> running now
	lastSeq := map[string]string{} // sequence -> last id started
	done := 0
	fail := make(chan error, 16)
	var wg sync.WaitGroup
	for w := range 6 {
		b := backends[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := 0
			for {
				mu.Lock()
				finished := done == jobs
				mu.Unlock()
				if finished || idle > 400 {
					return
				}
				got, err := b.Claim(ctx, core.ClaimRequest{Queue: "q", WorkerID: fmt.Sprintf("w%d", w), Limit: 3, LeaseTTL: time.Minute})
				if err != nil {
					fail <- err
					return
				}
				if len(got) == 0 {
					idle++
					time.Sleep(5 * time.Millisecond)
					continue
				}
				idle = 0
				mu.Lock()
				for _, j := range got {
					if j.Task == "t" {
						running["task"]++
						running[j.LimitKey]++
						if running["task"] > perTask || running[j.LimitKey] > perKey {
							fail <- fmt.Errorf("running %v after claiming %s of key %s", running, j.ID, j.LimitKey)
						}
					} else {
						running[j.SequenceKey]++
						if running[j.SequenceKey] > 1 || j.ID <= lastSeq[j.SequenceKey] {
							fail <- fmt.Errorf("sequence %s: %s started with %d running, after %s", j.SequenceKey, j.ID, running[j.SequenceKey], lastSeq[j.SequenceKey])
						}
						lastSeq[j.SequenceKey] = j.ID
					}
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
				items := make([]core.Completion, len(got))
				mu.Lock()
				for i, j := range got {
					items[i] = core.Completion{Lease: j.Lease}
					if j.Task == "t" {
						running["task"]--
						running[j.LimitKey]--
					} else {
						running[j.SequenceKey]--
					}
				}
				mu.Unlock()
				errs, err := b.Complete(ctx, items)
				if err != nil {
					fail <- err
					return
				}
				for _, e := range errs {
					if e != nil {
						fail <- e
						return
					}
				}
				mu.Lock()
				done += len(got)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Error(err)
	}
	if done != jobs {
		t.Fatalf("%d of %d jobs completed", done, jobs)
	}
	for _, r := range res {
		runs, err := backends[0].ListRuns(ctx, r.Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].Status != core.RunSucceeded {
			t.Fatalf("job %s has runs %+v, want one succeeded", r.Job.ID, runs)
		}
	}
	byKey, err := backends[0].RunningByKey(ctx, "t", 0)
	if err != nil || len(byKey) != 0 {
		t.Fatalf("RunningByKey after the drain: %v %v", byKey, err)
	}
}
