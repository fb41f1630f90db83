package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// The checks of check_test.go are themselves tested here: a clean record
// set passes, and each planted fault is caught by the rule meant for it.

// world is a scenario's plan, the store's snapshot and the workers'
// events, all consistent with each other until a test plants a fault.
type world struct {
	plan   map[string]planned
	snap   snapshot
	events []event
	faults int
	exp    expect
}

// cleanWorld makes n jobs planned as the runner plans them (2% to fail,
// 2% cancelled), every third succeeded one after a recovered first run,
// with the runs, checkpoints, results and events a correct store and
// correct workers leave behind.
func cleanWorld(n int) world {
	w := world{plan: map[string]planned{}, snap: snapshot{Counts: map[core.JobState]int64{}}, faults: 3,
		exp: expect{Faults: true, Recoveries: true}}
	add := func(e event) { w.events = append(w.events, e) }
	for k := 0; k < n; k++ {
		id := fmt.Sprintf("job%04d", k)
		p := planned{In: In{N: k, Steps: k % 4, WorkMs: 1, Fail: k%50 == 7}, Cancel: k%50 == 13}
		w.plan[id] = p
		sj := storedJob{Job: core.Job{ID: id, Queue: "faults", Task: faultTask.Name()}}
		switch {
		case p.Cancel:
			sj.Job.State, sj.Job.LastError = core.StateCancelled, "cancelled by the scenario"
		case p.Fail:
			sj.Job.State, sj.Job.LastError, sj.Job.Attempt = core.StateFailed, "boson: permanent: "+errPlanned.Error(), 1
			sj.Runs = []core.Run{{JobID: id, Attempt: 1, Token: 1, Status: core.RunFailed, Error: errPlanned.Error()}}
			sj.Job.Lease.Token = 1
			add(event{Kind: evStart, Job: id, Token: 1})
			add(event{Kind: evSend, Job: id, Token: 1, Op: opFail})
			add(event{Kind: evReply, Job: id, Token: 1, Op: opFail, Outcome: outAccepted})
		default:
			win := int64(1)
			if k%3 == 0 { // a first attempt lost its lease and was recovered
				win = 2
				sj.Runs = append(sj.Runs, core.Run{JobID: id, Attempt: 1, Token: 1, Status: core.RunLost})
				add(event{Kind: evStart, Job: id, Token: 1})
				add(event{Kind: evFinish, Job: id, Token: 1})
				add(event{Kind: evSend, Job: id, Token: 1, Op: opComplete})
				add(event{Kind: evReply, Job: id, Token: 1, Op: opComplete, Outcome: outLeaseLost})
			}
			sj.Runs = append(sj.Runs, core.Run{JobID: id, Attempt: int(win), Token: win, Status: core.RunSucceeded})
			out := Out{Token: win, Pid: 1}
			add(event{Kind: evStart, Job: id, Token: win})
			for i := 0; i < p.Steps; i++ {
				v := fmt.Sprintf("1/%d/%d", win, win)
				out.Steps = append(out.Steps, v)
				raw, _ := json.Marshal(v)
				sj.Checkpoints = append(sj.Checkpoints, core.Checkpoint{JobID: id, Step: fmt.Sprintf("step-s%d", i), Value: raw})
				add(event{Kind: evStep, Job: id, Token: win, Step: fmt.Sprintf("s%d", i), Value: v})
			}
			add(event{Kind: evFinish, Job: id, Token: win})
			add(event{Kind: evSend, Job: id, Token: win, Op: opComplete})
			add(event{Kind: evReply, Job: id, Token: win, Op: opComplete, Outcome: outAccepted})
			sj.Job.State, sj.Job.Attempt, sj.Job.Lease.Token = core.StateSucceeded, int(win), win
			sj.Job.Result, _ = json.Marshal(out)
		}
		w.snap.Counts[sj.Job.State]++
		w.snap.Jobs = append(w.snap.Jobs, sj)
	}
	return w
}

func (w world) verify() report { return verify(w.plan, w.snap, w.events, w.faults, w.exp) }

// job returns the stored job with index k.
func (w *world) job(k int) *storedJob { return &w.snap.Jobs[k] }

// setState moves job k to state st, keeping the store's counts in step.
func (w *world) setState(k int, st core.JobState) {
	j := w.job(k)
	w.snap.Counts[j.Job.State]--
	w.snap.Counts[st]++
	j.Job.State = st
}

// dropEvents removes the events of job k for which drop is true.
func (w *world) dropEvents(k int, drop func(event) bool) {
	id := w.job(k).Job.ID
	w.events = slices.DeleteFunc(w.events, func(e event) bool { return e.Job == id && drop(e) })
}

func TestCheckerPassesCleanWorld(t *testing.T) {
	w := cleanWorld(200)
	rep := w.verify()
	if len(rep.Problems) != 0 {
		t.Fatalf("a clean world broke %d invariants: %v", len(rep.Problems), rep.Problems)
	}
	want := report{Jobs: 200, Succeeded: 192, Failed: 4, Cancelled: 4, PlannedSucceeded: 192, PlannedFailed: 4, PlannedCancelled: 4,
		Faults: 3, Recoveries: 65, DuplicateExecutions: 65, StaleAttempts: 65, LeaseLost: 65}
	got := rep
	got.CheckpointsChecked = 0
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("figures\n got %s\nwant %s", got, want)
	}
	if rep.CheckpointsChecked == 0 {
		t.Fatal("no checkpoint read was checked")
	}
}

// TestCheckerCatchesPlantedFaults plants one fault at a time in a clean
// world; each must break the rule meant for it, and no rule outside the
// allowed ones (those the same fault breaks too, by its nature).
func TestCheckerCatchesPlantedFaults(t *testing.T) {
	// Indexes in cleanWorld: 0 succeeds after a recovery, 1 succeeds at
	// once, 2 succeeds with two steps, 7 fails as planned, 13 is cancelled.
	cases := []struct {
		name  string
		plant func(w *world)
		want  rule
		also  []rule
	}{
		{"a lost job", func(w *world) {
			w.snap.Counts[w.job(1).Job.State]--
			w.snap.Jobs = slices.Delete(w.snap.Jobs, 1, 2)
		}, ruleLost, []rule{ruleCounts, ruleSucceededCount}},
		{"a lost job the counts still hold", func(w *world) {
			w.snap.Jobs = slices.Delete(w.snap.Jobs, 1, 2)
		}, ruleLost, []rule{ruleCounts}},
		{"an unplanned failure", func(w *world) {
			w.setState(1, core.StateFailed)
			w.job(1).Runs[0].Status = core.RunFailed
			w.job(1).Job.LastError = "boson: attempts exhausted"
			w.dropEvents(1, func(e event) bool { return e.Op == opComplete })
		}, ruleUnplannedFailure, []rule{ruleSucceededCount}},
		{"an unplanned cancellation", func(w *world) {
			w.setState(1, core.StateCancelled)
			w.job(1).Runs = nil
			w.dropEvents(1, func(event) bool { return true })
		}, ruleUnplannedCancel, []rule{ruleSucceededCount}},
		{"a planned failure that succeeded", func(w *world) {
			w.setState(7, core.StateSucceeded)
		}, rulePlanBroken, []rule{ruleSucceededCount, ruleDuplicate, ruleStaleResult, ruleUnbacked, ruleCheckpoint}},
		{"a planned failure with another error", func(w *world) {
			w.job(7).Job.LastError = "boson: attempts exhausted"
		}, rulePlanBroken, nil},
		{"a cancelled job that ran to the end", func(w *world) {
			w.setState(13, core.StateSucceeded)
		}, rulePlanBroken, []rule{ruleSucceededCount, ruleDuplicate, ruleStaleResult, ruleUnbacked, ruleCheckpoint}},
		{"a succeeded count the store's count denies", func(w *world) {
			w.snap.Counts[core.StateSucceeded]--
			w.snap.Counts[core.StateQueued]++
		}, ruleSucceededCount, []rule{ruleCounts}},
		{"a job left running", func(w *world) {
			w.setState(1, core.StateRunning)
			w.job(1).Runs[0].Status = core.RunRunning
		}, ruleNotTerminal, []rule{ruleSucceededCount, ruleCounts, ruleDuplicate}},
		{"a job nobody spawned", func(w *world) {
			delete(w.plan, w.job(1).Job.ID)
		}, ruleStranger, []rule{ruleSucceededCount, ruleCounts}},
		{"zero faults", func(w *world) { w.faults = 0 }, ruleNoFaults, nil},
		{"zero recoveries", func(w *world) {
			for i := range w.snap.Jobs {
				for r := range w.job(i).Runs {
					if w.job(i).Runs[r].Status == core.RunLost {
						w.job(i).Runs[r].Status = core.RunFailed
					}
				}
			}
		}, ruleNoRecoveries, nil},
		{"two succeeded runs", func(w *world) {
			w.job(0).Runs[0].Status = core.RunSucceeded
		}, ruleDuplicate, nil},
		{"two completions accepted", func(w *world) {
			w.events = append(w.events, event{Kind: evReply, Job: w.job(0).Job.ID, Token: 1, Op: opComplete, Outcome: outAccepted})
		}, ruleDuplicate, nil},
		{"a completion accepted for a failed job", func(w *world) {
			w.events = append(w.events, event{Kind: evReply, Job: w.job(7).Job.ID, Token: 1, Op: opComplete, Outcome: outAccepted})
		}, ruleDuplicate, nil},
		{"a result from a stale attempt", func(w *world) {
			w.job(0).Job.Result, _ = json.Marshal(Out{Token: 1})
		}, ruleStaleResult, []rule{ruleCheckpoint}},
		{"a success no worker completed", func(w *world) {
			w.dropEvents(1, func(e event) bool { return e.Kind == evSend || e.Kind == evReply })
		}, ruleUnbacked, nil},
		{"a success under a token no attempt ran with", func(w *world) {
			w.dropEvents(1, func(e event) bool { return e.Kind == evStart })
		}, ruleUnbacked, nil},
		{"a checkpoint that changed", func(w *world) {
			for i, e := range w.events {
				if e.Job == w.job(2).Job.ID && e.Kind == evStep {
					w.events[i].Value = "other"
					break
				}
			}
		}, ruleCheckpoint, nil},
		{"a result step the store does not hold", func(w *world) {
			w.job(2).Checkpoints = w.job(2).Checkpoints[1:]
		}, ruleCheckpoint, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := cleanWorld(200)
			c.plant(&w)
			rep := w.verify()
			if !rep.broke(c.want) {
				t.Fatalf("the checks missed it: want rule %s, got %v", c.want, rep.Problems)
			}
			for _, p := range rep.Problems {
				if p.Rule != c.want && !slices.Contains(c.also, p.Rule) {
					t.Errorf("unexpected rule %s broken: %s", p.Rule, p.Detail)
				}
			}
		})
	}
	// Without the expectations, zero faults and zero recoveries pass: the
	// rules apply to scenarios built for them only.
	w := cleanWorld(50)
	w.faults, w.exp = 0, expect{}
	for i := range w.snap.Jobs {
		w.job(i).Runs = slices.DeleteFunc(w.job(i).Runs, func(r core.Run) bool { return r.Status == core.RunLost })
	}
	if rep := w.verify(); len(rep.Problems) != 0 {
		t.Fatalf("a fault-free scenario without expectations: %v", rep.Problems)
	}
}

// TestEventsAreTyped shows that records the checks cannot understand fail
// the scenario instead of being skipped: an unknown kind, a renamed
// field, an unknown write or outcome, a broken line; only a last line
// that a kill cut short of its newline is left out.
func TestEventsAreTyped(t *testing.T) {
	good := `{"kind":"send","job":"j1","token":2,"op":"complete"}`
	for _, bad := range []string{
		`{"kind":"completed","job":"j1","token":2}`,
		`{"kind":"start","id":"j1","token":2}`,
		`{"kind":"start","job":"j1"}`,
		`{"kind":"send","job":"j1","token":2,"op":"finish"}`,
		`{"kind":"reply","job":"j1","token":2,"op":"complete","outcome":"ok"}`,
		`{"kind":"step","job":"j1","token":2,"step":"s0"}`,
		`{"kind":"reply","job":"j1","tok`,
		`C j1 2`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "1.jsonl"), []byte(good+"\n"+bad+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if evs, _, err := readEvents(dir); err == nil {
			t.Errorf("readEvents accepted %s: %+v", bad, evs)
		} else if !strings.Contains(err.Error(), "1.jsonl:2") {
			t.Errorf("readEvents(%s): %v, want the file and line named", bad, err)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "1.jsonl"), []byte(good+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if evs, torn, err := readEvents(dir); err != nil || torn != 0 || len(evs) != 1 || evs[0] != (event{Kind: evSend, Job: "j1", Token: 2, Op: opComplete}) {
		t.Fatalf("readEvents(%s) = %+v, %d torn, %v", good, evs, torn, err)
	}
	// A last line without its newline was torn by a kill: left out and
	// counted, in that file only.
	for _, tail := range []string{`{"kind":"reply","job":"j1","tok`, good} {
		if err := os.WriteFile(filepath.Join(dir, "1.jsonl"), []byte(good+"\n"+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "2.jsonl"), []byte(good+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if evs, torn, err := readEvents(dir); err != nil || torn != 1 || len(evs) != 2 {
			t.Fatalf("a torn last line %s: %+v, %d torn, %v", tail, evs, torn, err)
		}
	}
}

// memScenario runs the fault task over n jobs planned as the runner plans
// them, on mem, with one worker in this process whose backend records its
// writes as the worker processes' does; extra, when set, changes the
// store before the worker starts. It returns the verdict.
func memScenario(t *testing.T, n int, extra func(ctx context.Context, b core.QueueBackend, plan map[string]planned)) report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := mem.New(mem.Options{Logger: quiet})
	t.Cleanup(func() { _ = b.Close() })
	client, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{t: t, sc: scenario{Jobs: n, WorkMs: 1}, ctx: ctx, b: b, queue: "faults", record: t.TempDir(), spawned: map[string]planned{}}
	r.spawn(client)
	if extra != nil {
		extra(ctx, b, r.spawned)
	}
	f, err := os.Create(filepath.Join(r.record, "1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := &recorder{f: f}
	w, err := boson.NewWorker(recording(b, rec), boson.WorkerOptions{Queues: []string{r.queue}, Concurrency: 8, Logger: quiet,
		PollInterval: 5 * time.Millisecond, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, faultTask, faultHandler(rec)); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for !r.terminal() {
		if ctx.Err() != nil {
			t.Fatal("the jobs did not finish")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	evs, _, err := readEvents(r.record)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := readSnapshot(ctx, b, r.queue)
	if err != nil {
		t.Fatal(err)
	}
	return verify(r.spawned, snap, evs, 0, expect{})
}

// TestCheckerOnARealRun holds a real run on mem (the runtime, the fault
// task, the recording backend) to the checks: it passes as it is, and an
// extra cancellation the plan does not know of is caught.
func TestCheckerOnARealRun(t *testing.T) {
	rep := memScenario(t, 150, nil)
	if len(rep.Problems) != 0 {
		t.Fatalf("a clean run on mem: %v", rep.Problems)
	}
	if rep.Succeeded != 144 || rep.Failed != 3 || rep.Cancelled != 3 || rep.CheckpointsChecked == 0 {
		t.Fatalf("a clean run on mem: %s", rep)
	}
	rep = memScenario(t, 150, func(ctx context.Context, b core.QueueBackend, plan map[string]planned) {
		for id, p := range plan {
			if !p.Cancel && !p.Fail {
				if _, err := b.Cancel(ctx, id, "planted"); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	})
	if !rep.broke(ruleUnplannedCancel) || !rep.broke(ruleSucceededCount) {
		t.Fatalf("an unplanned cancellation on mem went unnoticed: %s %v", rep, rep.Problems)
	}
}
