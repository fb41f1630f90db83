package faults_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/boson-go/boson/core"
)

// report holds a scenario's figures.
type report struct {
	Jobs, Succeeded, Failed, Cancelled int
	Faults                             int
	// Recoveries counts runs the store marked lost (a rescued lease).
	Recoveries int
	// DuplicateExecutions counts jobs whose handler started more than once
	// (allowed: execution is at least once).
	DuplicateExecutions int
	// StaleAttempts counts attempts that returned a result under a token
	// that was not the winning one; the store refused every one of them.
	StaleAttempts int
	// LeaseLost counts writes the store refused with ErrLeaseLost, as the
	// worker processes reported them.
	LeaseLost int
	// CheckpointRefusals counts step saves of stale attempts the store
	// refused with ErrLeaseLost.
	CheckpointRefusals int
	// DuplicateCompletions counts jobs with more than one succeeded run or
	// whose result came from a stale attempt; it must be 0.
	DuplicateCompletions int
	// CheckpointsChecked counts step values read back by some attempt and
	// compared with the stored value.
	CheckpointsChecked int
}

func (r report) String() string {
	return fmt.Sprintf("jobs=%d succeeded=%d failed=%d cancelled=%d faults=%d recoveries=%d duplicate_executions=%d stale_attempts_refused=%d lease_lost_refusals=%d checkpoint_refusals=%d duplicate_completions=%d checkpoints_checked=%d",
		r.Jobs, r.Succeeded, r.Failed, r.Cancelled, r.Faults, r.Recoveries, r.DuplicateExecutions, r.StaleAttempts, r.LeaseLost, r.CheckpointRefusals, r.DuplicateCompletions, r.CheckpointsChecked)
}

// records are what the worker processes wrote: per job, the tokens of the
// attempts that started and that returned a result, and every step value
// an attempt read back.
type records struct {
	started  map[string][]int64
	finished map[string][]int64
	steps    map[string]map[string][]string // job -> step -> values seen
	// accepted and refused hold, per job, the attempts whose completion
	// the store accepted and those whose write it refused (ErrLeaseLost).
	accepted map[string][]int64
	refused  map[string][]int64
	// checkpointRefused counts, per job, step saves refused with
	// ErrLeaseLost.
	checkpointRefused map[string]int
}

func readRecords(dir string) (records, error) {
	rec := records{started: map[string][]int64{}, finished: map[string][]int64{}, steps: map[string]map[string][]string{},
		accepted: map[string][]int64{}, refused: map[string][]int64{}, checkpointRefused: map[string]int{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return rec, err
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return rec, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			switch {
			case len(fs) == 3 && fs[0] == "X":
				tok, _ := strconv.ParseInt(fs[2], 10, 64)
				rec.started[fs[1]] = append(rec.started[fs[1]], tok)
			case len(fs) == 3 && fs[0] == "D":
				tok, _ := strconv.ParseInt(fs[2], 10, 64)
				rec.finished[fs[1]] = append(rec.finished[fs[1]], tok)
			case len(fs) == 3 && (fs[0] == "C" || fs[0] == "L"):
				n, _ := strconv.ParseInt(fs[2], 10, 64)
				if fs[0] == "C" {
					rec.accepted[fs[1]] = append(rec.accepted[fs[1]], n)
				} else {
					rec.refused[fs[1]] = append(rec.refused[fs[1]], n)
				}
			case len(fs) == 4 && fs[0] == "K":
				rec.checkpointRefused[fs[1]]++
			case len(fs) == 4 && fs[0] == "S":
				if rec.steps[fs[1]] == nil {
					rec.steps[fs[1]] = map[string][]string{}
				}
				rec.steps[fs[1]][fs[2]] = append(rec.steps[fs[1]][fs[2]], fs[3])
			}
		}
		f.Close()
	}
	return rec, nil
}

// check verifies the invariants from the store and the records, failing
// the test on any violation, and returns the figures.
func (r *run) check() report {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 5*60e9)
	defer cancel()
	rec, err := readRecords(r.record)
	if err != nil {
		t.Fatal(err)
	}
	rep := report{Jobs: len(r.spawned)}
	counts, err := r.b.CountJobs(ctx, core.JobFilter{Queue: r.queue})
	if err != nil {
		t.Fatal(err)
	}
	rep.Succeeded, rep.Failed, rep.Cancelled = int(counts[core.StateSucceeded]), int(counts[core.StateFailed]), int(counts[core.StateCancelled])
	if rep.Succeeded+rep.Failed+rep.Cancelled != rep.Jobs {
		t.Errorf("counts do not add up: spawned %d, store %v", rep.Jobs, counts)
	}
	seen := 0
	f := core.JobFilter{Queue: r.queue, Limit: core.MaxPageSize}
	for {
		page, err := r.b.ListJobs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page.Jobs {
			seen++
			r.checkJob(ctx, j, rec, &rep)
		}
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	if seen != rep.Jobs {
		t.Errorf("listed %d jobs, spawned %d", seen, rep.Jobs)
	}
	if rep.DuplicateCompletions != 0 {
		t.Errorf("%d duplicate completions", rep.DuplicateCompletions)
	}
	return rep
}

func (r *run) checkJob(ctx context.Context, j core.Job, rec records, rep *report) {
	t := r.t
	in, ok := r.spawned[j.ID]
	if !ok {
		t.Errorf("job %s in the store was never spawned", j.ID)
		return
	}
	if !j.State.Terminal() {
		t.Errorf("job %s is %s", j.ID, j.State)
	}
	runs, err := r.b.ListRuns(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	var succeeded []core.Run
	var maxToken int64
	for _, run := range runs {
		if run.Status == core.RunSucceeded {
			succeeded = append(succeeded, run)
		}
		if run.Status == core.RunLost {
			rep.Recoveries++
		}
		if run.Status == core.RunRunning {
			t.Errorf("job %s (%s) still has a running run %+v", j.ID, j.State, run)
		}
		maxToken = max(maxToken, run.Token)
	}
	if len(rec.started[j.ID]) > 1 {
		rep.DuplicateExecutions++
	}
	rep.LeaseLost += len(rec.refused[j.ID])
	rep.CheckpointRefusals += rec.checkpointRefused[j.ID]
	// The workers' side: the store accepted at most one completion, and
	// only for a job that succeeded, from the attempt of its succeeded run.
	if acc := rec.accepted[j.ID]; len(acc) > 1 || len(acc) == 1 && j.State != core.StateSucceeded {
		rep.DuplicateCompletions++
		t.Errorf("job %s (%s): the store accepted completions of attempts %v", j.ID, j.State, acc)
	}
	switch j.State {
	case core.StateSucceeded:
		if len(succeeded) != 1 {
			rep.DuplicateCompletions++
			t.Errorf("job %s has %d succeeded runs: %+v", j.ID, len(succeeded), runs)
			return
		}
		var out Out
		if err := json.Unmarshal(j.Result, &out); err != nil {
			t.Errorf("job %s result %q: %v", j.ID, j.Result, err)
			return
		}
		// The accepted write came from the last claim and no other.
		if out.Token != succeeded[0].Token || out.Token != maxToken {
			rep.DuplicateCompletions++
			t.Errorf("job %s: result written under token %d, succeeded run token %d, last token %d", j.ID, out.Token, succeeded[0].Token, maxToken)
		}
		if acc := rec.accepted[j.ID]; len(acc) == 1 && acc[0] != int64(succeeded[0].Attempt) {
			rep.DuplicateCompletions++
			t.Errorf("job %s: a worker saw attempt %d accepted, the store's succeeded run is attempt %d", j.ID, acc[0], succeeded[0].Attempt)
		}
		for _, tok := range rec.finished[j.ID] {
			if tok != out.Token {
				rep.StaleAttempts++
			}
		}
		if in.Fail {
			t.Errorf("job %s was meant to fail and succeeded", j.ID)
		}
		if len(out.Steps) != in.Steps {
			t.Errorf("job %s: result has %d steps, want %d", j.ID, len(out.Steps), in.Steps)
		}
	default:
		if len(succeeded) != 0 {
			rep.DuplicateCompletions++
			t.Errorf("job %s is %s yet has a succeeded run", j.ID, j.State)
		}
		if j.State == core.StateFailed && !in.Fail {
			t.Logf("job %s failed: %s (attempt %d)", j.ID, j.LastError, j.Attempt)
		}
	}
	// Checkpoint immutability: every value any attempt read back is the
	// stored one, and so is the result's copy.
	cps, err := r.b.Checkpoints(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{}
	for _, c := range cps {
		var v string
		if err := json.Unmarshal(c.Value, &v); err != nil {
			t.Errorf("job %s checkpoint %s = %q: %v", j.ID, c.Step, c.Value, err)
			continue
		}
		// The runtime stores step "s0" as checkpoint "step-s0".
		stored[strings.TrimPrefix(c.Step, "step-")] = v
	}
	for step, vals := range rec.steps[j.ID] {
		for _, v := range vals {
			rep.CheckpointsChecked++
			if sv, ok := stored[step]; !ok || sv != v {
				t.Errorf("job %s step %s: an attempt saw %q, the store holds %q", j.ID, step, v, sv)
			}
		}
	}
	if j.State == core.StateSucceeded {
		var out Out
		_ = json.Unmarshal(j.Result, &out)
		for i, v := range out.Steps {
			if stored["s"+strconv.Itoa(i)] != v {
				t.Errorf("job %s: result step %d %q, store %q", j.ID, i, v, stored["s"+strconv.Itoa(i)])
			}
		}
	}
}
