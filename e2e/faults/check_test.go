package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// planned is what a scenario meant to happen to one job it spawned.
type planned struct {
	In
	// Cancel is set for jobs the scenario cancelled right after spawning
	// them, before any worker ran.
	Cancel bool
}

// expect is what a scenario demands beyond its jobs' plans.
type expect struct {
	// Faults: at least one fault must have fired.
	Faults bool
	// Recoveries: the scenario is built to take leases away from running
	// attempts, so the store must have recovered at least one run.
	Recoveries bool
}

// storedJob is one job as the store holds it at the end of a scenario.
type storedJob struct {
	Job         core.Job
	Runs        []core.Run
	Checkpoints []core.Checkpoint
}

// snapshot is the store's view at the end of a scenario: its counts by
// state and every job it lists.
type snapshot struct {
	Counts map[core.JobState]int64
	Jobs   []storedJob
}

// rule names an invariant the checks hold a scenario to.
type rule string

const (
	ruleCounts             rule = "counts"              // the store's counts disagree with the spawned jobs or with its own listing
	ruleLost               rule = "lost-job"            // a spawned job is not in the store
	ruleStranger           rule = "stranger"            // the store holds a job nobody spawned
	ruleNotTerminal        rule = "not-terminal"        // a job or one of its runs is still going
	ruleUnplannedFailure   rule = "unplanned-failure"   // a job failed that was not meant to
	ruleUnplannedCancel    rule = "unplanned-cancel"    // a job was cancelled that was not meant to be
	rulePlanBroken         rule = "plan-broken"         // a job meant to fail or be cancelled ended otherwise
	ruleSucceededCount     rule = "succeeded-count"     // the number of succeeded jobs is not the planned one
	ruleDuplicate          rule = "duplicate-complete"  // a job completed twice, or a completion the store accepted does not match its runs
	ruleStaleResult        rule = "stale-result"        // the stored result is not from the job's last claim
	ruleUnbacked           rule = "unbacked-success"    // a job succeeded under a token no attempt ran or completed with
	ruleCheckpoint         rule = "checkpoint-changed"  // a step value an attempt saw, or the result's copy, differs from the store's
	ruleNoFaults           rule = "no-faults"           // a scenario with a fault injected none
	ruleNoRecoveries       rule = "no-recoveries"       // a scenario built to take leases away recovered no run
	ruleUnreadableRecords  rule = "unreadable-records"  // the worker processes' records could not be read
	ruleUnreadableSnapshot rule = "unreadable-snapshot" // the store could not be read
)

// problem is one broken invariant.
type problem struct {
	Rule   rule
	Detail string
}

func (p problem) String() string { return string(p.Rule) + ": " + p.Detail }

// report holds a scenario's figures and the invariants it broke.
type report struct {
	Jobs, Succeeded, Failed, Cancelled int
	// Planned figures: what the scenario meant to happen.
	PlannedSucceeded, PlannedFailed, PlannedCancelled int
	Faults                                            int
	// Recoveries counts runs the store marked lost (a rescued lease).
	Recoveries int
	// DuplicateExecutions counts jobs whose handler started more than once
	// (allowed: execution is at least once).
	DuplicateExecutions int
	// StaleAttempts counts attempts that returned a result under a token
	// that was not the winning one; the store refused every one of them.
	StaleAttempts int
	// LeaseLost counts fenced writes the store refused with ErrLeaseLost,
	// as the worker processes recorded its answers.
	LeaseLost int
	// CheckpointRefusals counts step saves of stale attempts the store
	// refused with ErrLeaseLost.
	CheckpointRefusals int
	// DuplicateCompletions counts jobs with more than one succeeded run,
	// more than one accepted completion, or a result from a stale attempt.
	DuplicateCompletions int
	// CheckpointsChecked counts step values read back by some attempt and
	// compared with the stored value.
	CheckpointsChecked int
	// Problems lists every broken invariant; a scenario passes only when
	// it is empty.
	Problems []problem
}

func (r report) String() string {
	return fmt.Sprintf("jobs=%d succeeded=%d/%d failed=%d/%d cancelled=%d/%d faults=%d recoveries=%d duplicate_executions=%d stale_attempts_refused=%d lease_lost_refusals=%d checkpoint_refusals=%d duplicate_completions=%d checkpoints_checked=%d problems=%d",
		r.Jobs, r.Succeeded, r.PlannedSucceeded, r.Failed, r.PlannedFailed, r.Cancelled, r.PlannedCancelled, r.Faults, r.Recoveries,
		r.DuplicateExecutions, r.StaleAttempts, r.LeaseLost, r.CheckpointRefusals, r.DuplicateCompletions, r.CheckpointsChecked, len(r.Problems))
}

// broke reports whether the report holds a problem of rule ru.
func (r report) broke(ru rule) bool {
	for _, p := range r.Problems {
		if p.Rule == ru {
			return true
		}
	}
	return false
}

// readSnapshot reads the store's view of queue: counts, then every job
// with its runs and checkpoints.
func readSnapshot(ctx context.Context, b core.QueueBackend, queue string) (snapshot, error) {
	var s snapshot
	var err error
	if s.Counts, err = b.CountJobs(ctx, core.JobFilter{Queue: queue}); err != nil {
		return s, err
	}
	f := core.JobFilter{Queue: queue, Limit: core.MaxPageSize}
	for {
		page, err := b.ListJobs(ctx, f)
		if err != nil {
			return s, err
		}
		for _, j := range page.Jobs {
			sj := storedJob{Job: j}
			if sj.Runs, err = b.ListRuns(ctx, j.ID); err != nil {
				return s, fmt.Errorf("runs of %s: %w", j.ID, err)
			}
			if sj.Checkpoints, err = b.Checkpoints(ctx, j.ID); err != nil {
				return s, fmt.Errorf("checkpoints of %s: %w", j.ID, err)
			}
			s.Jobs = append(s.Jobs, sj)
		}
		if page.Next == "" {
			return s, nil
		}
		f.Cursor = page.Next
	}
}

// check reads the store and the worker processes' records and holds them
// to every invariant, failing the test on each problem. A store that does
// not answer is asked again for a while (it may be restarting, or short of
// connections); records or a store that cannot be read fail the scenario
// with that one problem, since nothing else can be checked.
func (r *run) check() report {
	t := r.t
	exp := expect{Faults: r.sc.Fault != nil, Recoveries: r.sc.Recovers}
	unreadable := func(ru rule, err error) report {
		rep := verify(r.spawned, snapshot{}, nil, int(r.faults.Load()), expect{})
		rep.Succeeded, rep.Failed, rep.Cancelled = 0, 0, 0
		rep.Problems = []problem{{ru, err.Error()}}
		return rep
	}
	var rep report
	evs, torn, err := readEvents(r.record)
	if torn > 0 {
		t.Logf("%s: %d records torn by a kill left out", r.sc.Name, torn)
	}
	if err != nil {
		rep = unreadable(ruleUnreadableRecords, err)
	} else if snap, err := r.snapshot(); err != nil {
		rep = unreadable(ruleUnreadableSnapshot, err)
	} else {
		rep = verify(r.spawned, snap, evs, int(r.faults.Load()), exp)
	}
	const show = 50
	for i, p := range rep.Problems {
		if i == show {
			t.Errorf("%s: and %d more problems", r.sc.Name, len(rep.Problems)-show)
			break
		}
		t.Errorf("%s: %s", r.sc.Name, p)
	}
	return rep
}

// snapshot reads the store's view of the scenario's queue, again after an
// error until a minute has passed.
func (r *run) snapshot() (snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	deadline := time.Now().Add(time.Minute)
	for {
		snap, err := readSnapshot(ctx, r.b, r.queue)
		if err == nil || time.Now().After(deadline) {
			return snap, err
		}
		r.t.Logf("reading the store: %v; trying again", err)
		time.Sleep(500 * time.Millisecond)
	}
}

// jobEvents are the workers' events of one job.
type jobEvents struct {
	started  map[int64]bool      // tokens of attempts that started
	starts   int                 // attempts that started
	finished []int64             // tokens of attempts that returned a result
	steps    map[string][]string // step -> values read back
	sent     map[int64]bool      // tokens under which a completion was sent
	accepted []int64             // tokens whose completion the store accepted
	refused  map[writeOp]int     // writes the store refused with ErrLeaseLost
}

// verify holds the store's snapshot and the worker processes' events to
// the scenario's plan and returns the figures with every broken
// invariant. It reads nothing else, so tests can feed it planted faults.
func verify(plan map[string]planned, snap snapshot, evs []event, faults int, exp expect) report {
	rep := report{Jobs: len(plan), Faults: faults}
	bad := func(ru rule, format string, a ...any) {
		rep.Problems = append(rep.Problems, problem{ru, fmt.Sprintf(format, a...)})
	}
	for _, p := range plan {
		switch {
		case p.Cancel:
			rep.PlannedCancelled++
		case p.Fail:
			rep.PlannedFailed++
		default:
			rep.PlannedSucceeded++
		}
	}

	// The workers' events, by job.
	byJob := map[string]*jobEvents{}
	of := func(id string) *jobEvents {
		je := byJob[id]
		if je == nil {
			je = &jobEvents{started: map[int64]bool{}, steps: map[string][]string{}, sent: map[int64]bool{}, refused: map[writeOp]int{}}
			byJob[id] = je
		}
		return je
	}
	for _, e := range evs {
		je := of(e.Job)
		switch e.Kind {
		case evStart:
			je.started[e.Token] = true
			je.starts++
		case evFinish:
			je.finished = append(je.finished, e.Token)
		case evStep:
			je.steps[e.Step] = append(je.steps[e.Step], e.Value)
		case evSend:
			if e.Op == opComplete {
				je.sent[e.Token] = true
			}
		case evReply:
			switch {
			case e.Outcome == outLeaseLost:
				je.refused[e.Op]++
			case e.Outcome == outAccepted && e.Op == opComplete:
				je.accepted = append(je.accepted, e.Token)
			}
		}
	}
	for id := range byJob {
		if _, ok := plan[id]; !ok {
			bad(ruleStranger, "the workers ran job %s, which was never spawned", id)
		}
	}

	// The store's counts and its listing.
	rep.Succeeded, rep.Failed, rep.Cancelled = int(snap.Counts[core.StateSucceeded]), int(snap.Counts[core.StateFailed]), int(snap.Counts[core.StateCancelled])
	var counted int64
	for _, n := range snap.Counts {
		counted += n
	}
	if rep.Succeeded+rep.Failed+rep.Cancelled != rep.Jobs || counted != int64(rep.Jobs) {
		bad(ruleCounts, "spawned %d jobs, the store counts %v", rep.Jobs, snap.Counts)
	}
	listed := map[core.JobState]int64{}
	seen := map[string]bool{}
	for _, sj := range snap.Jobs {
		listed[sj.Job.State]++
		if seen[sj.Job.ID] {
			bad(ruleCounts, "the store lists job %s twice", sj.Job.ID)
		}
		seen[sj.Job.ID] = true
	}
	for _, st := range []core.JobState{core.StateQueued, core.StateRunning, core.StateSleeping, core.StateSucceeded, core.StateFailed, core.StateCancelled} {
		if listed[st] != snap.Counts[st] {
			bad(ruleCounts, "the store counts %d %s jobs and lists %d", snap.Counts[st], st, listed[st])
		}
	}
	var lost []string
	for id := range plan {
		if !seen[id] {
			lost = append(lost, id)
		}
	}
	sort.Strings(lost)
	for _, id := range lost {
		bad(ruleLost, "job %s was spawned and the store does not list it", id)
	}
	if rep.Succeeded != rep.PlannedSucceeded {
		bad(ruleSucceededCount, "%d jobs succeeded, %d were planned to (%d spawned, %d to fail, %d cancelled)",
			rep.Succeeded, rep.PlannedSucceeded, rep.Jobs, rep.PlannedFailed, rep.PlannedCancelled)
	}

	for _, sj := range snap.Jobs {
		j := sj.Job
		p, ok := plan[j.ID]
		if !ok {
			bad(ruleStranger, "the store holds job %s, which was never spawned", j.ID)
			continue
		}
		je := of(j.ID)
		if !j.State.Terminal() {
			bad(ruleNotTerminal, "job %s is %s", j.ID, j.State)
		}
		var succeeded []core.Run
		var maxToken int64
		for _, run := range sj.Runs {
			switch run.Status {
			case core.RunSucceeded:
				succeeded = append(succeeded, run)
			case core.RunLost:
				rep.Recoveries++
			case core.RunRunning:
				bad(ruleNotTerminal, "job %s (%s) still has a running run %+v", j.ID, j.State, run)
			}
			maxToken = max(maxToken, run.Token)
		}
		if je.starts > 1 {
			rep.DuplicateExecutions++
		}
		for _, n := range je.refused {
			rep.LeaseLost += n
		}
		rep.CheckpointRefusals += je.refused[opCheckpoint]

		// The plan.
		switch {
		case j.State == core.StateFailed && !p.Fail:
			bad(ruleUnplannedFailure, "job %s failed and was not meant to: %s (attempt %d)", j.ID, j.LastError, j.Attempt)
		case j.State == core.StateCancelled && !p.Cancel:
			bad(ruleUnplannedCancel, "job %s was cancelled and was not meant to be: %s", j.ID, j.LastError)
		case p.Cancel && j.State != core.StateCancelled:
			bad(rulePlanBroken, "job %s was cancelled by the scenario and ended %s", j.ID, j.State)
		case p.Fail && !p.Cancel && j.State != core.StateFailed:
			bad(rulePlanBroken, "job %s was meant to fail and ended %s", j.ID, j.State)
		case p.Fail && !p.Cancel && !strings.Contains(j.LastError, errPlanned.Error()):
			bad(rulePlanBroken, "job %s failed with %q, not the planned failure", j.ID, j.LastError)
		}

		// Completions: the store accepted at most one, only for a job
		// that succeeded, from the attempt of its succeeded run.
		if acc := je.accepted; len(acc) > 1 || len(acc) == 1 && j.State != core.StateSucceeded {
			rep.DuplicateCompletions++
			bad(ruleDuplicate, "job %s (%s): the store accepted completions under tokens %v", j.ID, j.State, acc)
		}
		if j.State != core.StateSucceeded {
			if len(succeeded) != 0 {
				rep.DuplicateCompletions++
				bad(ruleDuplicate, "job %s is %s yet has a succeeded run", j.ID, j.State)
			}
		} else {
			verifySucceeded(sj, p, succeeded, maxToken, je, &rep, bad)
		}

		// Checkpoint immutability: every value any attempt read back is
		// the stored one, and so is the result's copy.
		stored := map[string]string{}
		for _, c := range sj.Checkpoints {
			var v string
			if err := json.Unmarshal(c.Value, &v); err != nil {
				bad(ruleCheckpoint, "job %s checkpoint %s = %q: %v", j.ID, c.Step, c.Value, err)
				continue
			}
			// The runtime stores step "s0" as checkpoint "step-s0".
			stored[strings.TrimPrefix(c.Step, "step-")] = v
		}
		steps := make([]string, 0, len(je.steps))
		for step := range je.steps {
			steps = append(steps, step)
		}
		sort.Strings(steps)
		for _, step := range steps {
			for _, v := range je.steps[step] {
				rep.CheckpointsChecked++
				if sv, ok := stored[step]; !ok || sv != v {
					bad(ruleCheckpoint, "job %s step %s: an attempt saw %q, the store holds %q", j.ID, step, v, sv)
				}
			}
		}
		if j.State == core.StateSucceeded {
			var out Out
			_ = json.Unmarshal(j.Result, &out)
			for i, v := range out.Steps {
				if stored["s"+strconv.Itoa(i)] != v {
					bad(ruleCheckpoint, "job %s: result step %d %q, store %q", j.ID, i, v, stored["s"+strconv.Itoa(i)])
				}
			}
		}
	}

	if exp.Faults && rep.Faults == 0 {
		bad(ruleNoFaults, "the scenario injects faults and none fired")
	}
	if exp.Recoveries && rep.Recoveries == 0 {
		bad(ruleNoRecoveries, "the scenario is built to take leases away and the store recovered no run (%d faults)", rep.Faults)
	}
	return rep
}

// verifySucceeded checks a succeeded job: one succeeded run, under the
// job's last token; a result written by the attempt of that token, which
// started, sent the completion and (if the store's answer arrived) saw it
// accepted; and the planned number of steps.
func verifySucceeded(sj storedJob, p planned, succeeded []core.Run, maxToken int64, je *jobEvents, rep *report, bad func(rule, string, ...any)) {
	j := sj.Job
	if len(succeeded) != 1 {
		rep.DuplicateCompletions++
		bad(ruleDuplicate, "job %s has %d succeeded runs: %+v", j.ID, len(succeeded), sj.Runs)
		return
	}
	win := succeeded[0].Token
	var out Out
	if err := json.Unmarshal(j.Result, &out); err != nil {
		bad(ruleStaleResult, "job %s result %q: %v", j.ID, j.Result, err)
		return
	}
	if out.Token != win || out.Token != maxToken {
		rep.DuplicateCompletions++
		bad(ruleStaleResult, "job %s: result written under token %d, succeeded run token %d, last token %d", j.ID, out.Token, win, maxToken)
	}
	if len(je.accepted) == 1 && je.accepted[0] != win {
		rep.DuplicateCompletions++
		bad(ruleDuplicate, "job %s: a worker saw its completion under token %d accepted, the store's succeeded run has token %d", j.ID, je.accepted[0], win)
	}
	if !je.started[win] || !je.sent[win] {
		bad(ruleUnbacked, "job %s succeeded under token %d, and no worker recorded an attempt that started (%v) and sent its completion (%v) under it",
			j.ID, win, je.started[win], je.sent[win])
	}
	for _, tok := range je.finished {
		if tok != out.Token {
			rep.StaleAttempts++
		}
	}
	if len(out.Steps) != p.Steps {
		bad(ruleCheckpoint, "job %s: result has %d steps, want %d", j.ID, len(out.Steps), p.Steps)
	}
}

// envTable names a file to which every scenario appends its figures as a
// row of the Markdown table in docs/guarantees.md.
const envTable = "BOSON_FAULTS_TABLE"

// tableHeader is the head of the table that envTable's rows belong to.
const tableHeader = `| scenario | jobs | succeeded (planned) | failed (planned) | cancelled (planned) | faults fired | recoveries | duplicate executions | stale attempts refused | lease-lost refusals | duplicate completions | checkpoint reads checked | invariants |
|---|---|---|---|---|---|---|---|---|---|---|---|---|`

var tableMu sync.Mutex

// writeRow appends the scenario's row to the file envTable names, if any.
func writeRow(t testing.TB, name string, rep report) {
	path := os.Getenv(envTable)
	if path == "" {
		return
	}
	tableMu.Lock() // scenarios run in parallel
	defer tableMu.Unlock()
	held := "all held"
	if n := len(rep.Problems); n > 0 || t.Failed() {
		held = fmt.Sprintf("**%d broken**", n)
	}
	row := fmt.Sprintf("| %s | %s | %s (%s) | %s (%s) | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s |\n", name,
		thousands(rep.Jobs), thousands(rep.Succeeded), thousands(rep.PlannedSucceeded), thousands(rep.Failed), thousands(rep.PlannedFailed),
		thousands(rep.Cancelled), thousands(rep.PlannedCancelled), thousands(rep.Faults), thousands(rep.Recoveries),
		thousands(rep.DuplicateExecutions), thousands(rep.StaleAttempts), thousands(rep.LeaseLost), thousands(rep.DuplicateCompletions),
		thousands(rep.CheckpointsChecked), held)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("%s: %v", envTable, err)
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		_, _ = f.WriteString(tableHeader + "\n")
	}
	if _, err := f.WriteString(row); err != nil {
		t.Errorf("%s: %v", envTable, err)
	}
}

// thousands formats n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
