package natsq_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
)

// Worker processes sharing one server claim (100 at a time) and complete
// flow-controlled jobs: a task limit, a per-key limit and sequences hold
// across the processes. Every replica decides each claim at the server's
// time of its command, and those times follow the log's order, so the runs'
// times show what ran at once: no more than the limits, and the jobs of a
// sequence one after the other in id order.
func TestMultiProcessFlow(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { multiProcessFlow(t, embeddedURL(t)) })
	t.Run("server", func(t *testing.T) { multiProcessFlow(t, externalURL(t)) })
}

func multiProcessFlow(t *testing.T, url string) {
	const total, procs, perKey, perTask = 900, 3, 2, 5
	nc := connect(t, url)
	ns := namespace("mpflow")
	b := newBackend(t, nc, natsq.Options{Namespace: ns})
	ctx := context.Background()
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "flow", MaxRunning: perTask, MaxRunningPerKey: perKey}); err != nil {
		t.Fatal(err)
	}
	reqs := make([]core.EnqueueRequest, total)
	for i := range reqs {
		r := core.EnqueueRequest{Queue: "mp", Task: "flow", Payload: []byte(strconv.Itoa(i))}
		switch i % 3 {
		case 0:
			r.LimitKey = fmt.Sprint("k", i%7)
		case 1:
			r.SequenceKey = fmt.Sprint("s", i%4)
		default:
			r.Task = "plain"
		}
		reqs[i] = r
	}
	if _, err := b.Enqueue(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorkerURL+"="+url, envWorkerNS+"="+ns,
			envWorkerOut+"="+filepath.Join(dir, fmt.Sprintf("w%d", i)), envWorkerJobs+"="+strconv.Itoa(total))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	type span struct {
		id         string
		start, end time.Time
	}
	byKey, bySeq := map[string][]span{}, map[string][]span{}
	var flow []span
	var page core.JobPage
	for cursor := ""; ; cursor = page.Next {
		var err error
		page, err = b.ListJobs(ctx, core.JobFilter{Queue: "mp", Cursor: cursor, Limit: core.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			runs, err := b.ListRuns(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if j.State != core.StateSucceeded || len(runs) != 1 {
				t.Fatalf("job %s is %s after %d runs", j.ID, j.State, len(runs))
			}
			sp := span{j.ID, runs[0].StartedAt, runs[0].FinishedAt}
			if j.Task == "flow" {
				flow = append(flow, sp)
			}
			if j.LimitKey != "" {
				byKey[j.LimitKey] = append(byKey[j.LimitKey], sp)
			}
			if j.SequenceKey != "" {
				bySeq[j.SequenceKey] = append(bySeq[j.SequenceKey], sp)
			}
		}
		if page.Next == "" {
			break
		}
	}
	// most is the largest number of spans running at one time; a span that
	// ends at the time another starts ended first (its completion came
	// first in the log).
	most := func(spans []span) int {
		type ev struct {
			at time.Time
			d  int
		}
		var evs []ev
		for _, s := range spans {
			evs = append(evs, ev{s.start, 1}, ev{s.end, -1})
		}
		sort.Slice(evs, func(i, j int) bool {
			if !evs[i].at.Equal(evs[j].at) {
				return evs[i].at.Before(evs[j].at)
			}
			return evs[i].d < evs[j].d
		})
		n, top := 0, 0
		for _, e := range evs {
			n += e.d
			top = max(top, n)
		}
		return top
	}
	if n := most(flow); n > perTask || n < 2 {
		t.Fatalf("task flow ran %d jobs at once, limit %d", n, perTask)
	}
	for k, spans := range byKey {
		if n := most(spans); n > perKey {
			t.Fatalf("key %s ran %d jobs at once, limit %d", k, n, perKey)
		}
	}
	for k, spans := range bySeq {
		slices.SortFunc(spans, func(a, b span) int { return compareStrings(a.id, b.id) })
		for i := 1; i < len(spans); i++ {
			if spans[i].start.Before(spans[i-1].end) {
				t.Fatalf("sequence %s: job %s started at %v, before job %s ended at %v", k, spans[i].id, spans[i].start, spans[i-1].id, spans[i-1].end)
			}
		}
	}
	t.Logf("%d flow jobs, at most %d at once; %d keys, %d sequences", len(flow), most(flow), len(byKey), len(bySeq))
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
