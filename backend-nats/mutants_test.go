package natsq_test

import (
	"slices"
	"testing"

	"github.com/boson-go/boson/conformance/mutants"
)

// storeMutants break one rule each in the replica's state machine (apply.go
// and state.go), its reads and its notifications. TestMutants builds the
// suite with each one in turn and requires the named cases to fail.
var storeMutants = []mutants.Mutant{{
	Name:   "claim-ignores-run-at",
	Breaks: []string{mutants.ClaimDueOnly},
	Edits: []mutants.Edit{
		{File: "apply.go", Find: "if k.runAt > nowMicros {", Replace: "if k.runAt > nowMicros+1<<60 {"},
		{File: "flow_ready.go", Find: "if k.runAt > micros(s.now) {", Replace: "if k.runAt > micros(s.now)+1<<60 {"},
		{File: "flow_ready.go", Find: "\t\tif k.runAt > nowMicros {\n\t\t\treturn false", Replace: "\t\tif k.runAt > nowMicros+1<<60 {\n\t\t\treturn false"},
	},
	CaughtBy: []string{"Claim/FutureRunAt", "Outcome/FailRetryAt", mutants.ModelCase},
}, {
	Name:     "claim-over-limit",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "for len(jobs) < c.Limit && !s.queueFull(c.Queue) {", Replace: "for len(jobs) <= c.Limit && !s.queueFull(c.Queue) {"}},
	CaughtBy: []string{"Claim/Limit", mutants.ModelCase},
}, {
	Name:     "claim-keeps-ready-entry",
	Breaks:   []string{mutants.ClaimExclusive},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "\t\ts.unindex(r)\n\t\tj := &r.job\n\t\tif j.State != core.StateSleeping {", Replace: "\t\tj := &r.job\n\t\tif j.State != core.StateSleeping {"}},
	CaughtBy: []string{"Claim/RunningNotReclaimed"},
}, {
	Name:     "token-reused",
	Breaks:   []string{mutants.TokensIncrease, mutants.FenceWrites},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "Token: j.Lease.Token + 1, ExpiresAt", Replace: "Token: max(j.Lease.Token, 1), ExpiresAt"}},
	CaughtBy: []string{"Fencing/AfterRescue/Complete", "Reads/RunIDsUnique"},
}, {
	Name:     "fence-ignores-token",
	Breaks:   []string{mutants.FenceWrites},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "if r.job.State != core.StateRunning || r.job.Lease.Token != l.Token {", Replace: "if r.job.State != core.StateRunning {"}},
	CaughtBy: []string{"Fencing/AfterRescue/Complete", "Fencing/AfterRescue/Heartbeat", "Fencing/AfterRescue/SaveCheckpoint"},
}, {
	Name:   "fail-unfenced",
	Breaks: []string{mutants.FenceFail},
	Edits: []mutants.Edit{{File: "apply.go",
		Find:    "\tr, err := s.fenced(c.Lease)\n\tif err != nil {\n\t\treturn outcome{err: err}\n\t}\n\ts.unindex(r)\n\tr.closeRun(core.RunFailed",
		Replace: "\tr := s.jobs[c.Lease.JobID]\n\tif r == nil {\n\t\treturn outcome{err: core.ErrLeaseLost}\n\t}\n\ts.unindex(r)\n\tr.closeRun(core.RunFailed"}},
	CaughtBy: []string{"Fencing/AfterRescue/Fail", "Fencing/AfterComplete/Fail", "Fencing/AfterCancel/Fail"},
}, {
	Name:   "sleep-unfenced",
	Breaks: []string{mutants.FenceSleep},
	Edits: []mutants.Edit{{File: "apply.go",
		Find:    "\tr, err := s.fenced(c.Lease)\n\tif err != nil {\n\t\treturn outcome{err: err}\n\t}\n\ts.unindex(r)\n\tr.closeRun(core.RunSleeping",
		Replace: "\tr := s.jobs[c.Lease.JobID]\n\tif r == nil {\n\t\treturn outcome{err: core.ErrLeaseLost}\n\t}\n\ts.unindex(r)\n\tr.closeRun(core.RunSleeping"}},
	CaughtBy: []string{"Fencing/AfterRescue/Sleep", "Fencing/AfterComplete/Sleep", "Fencing/AfterCancel/Sleep"},
}, {
	Name:     "rescue-before-expiry",
	Breaks:   []string{mutants.RescueAfterExpiry},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "if !seen[r.job.ID] && !r.job.Lease.ExpiresAt.After(now) {", Replace: "if !seen[r.job.ID] {"}},
	CaughtBy: []string{"Lease/RescueOnlyExpired", mutants.ModelCase},
}, {
	Name:     "rescue-exhausted-requeued",
	Breaks:   []string{mutants.ExhaustedFails},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "r.closeRun(core.RunLost, now, \"lease expired\")\n\t\tif r.job.Attempt >= r.job.MaxAttempts {", Replace: "r.closeRun(core.RunLost, now, \"lease expired\")\n\t\tif false {"}},
	CaughtBy: []string{"Lease/RescueExhaustedFails"},
}, {
	Name:     "fail-exhausted-requeued",
	Breaks:   []string{mutants.ExhaustedFails},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "if c.Terminal || r.job.Attempt >= r.job.MaxAttempts {", Replace: "if c.Terminal {"}},
	CaughtBy: []string{"Outcome/FailAttemptsExhausted", mutants.ModelCase},
}, {
	Name:     "retry-keeps-max-attempts",
	Breaks:   []string{mutants.RetryGrowsAttempts},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "\tif r.job.Attempt >= r.job.MaxAttempts {\n\t\tr.job.MaxAttempts = r.job.Attempt + 1\n\t}\n", Replace: ""}},
	CaughtBy: []string{"Retry/SpentBudget"},
}, {
	Name:   "batch-written-before-conflict",
	Breaks: []string{mutants.BatchAtomic},
	Edits: []mutants.Edit{{File: "apply.go",
		Find:    "if r.job.Fingerprint != j.Fingerprint {\n",
		Replace: "if r.job.Fingerprint != j.Fingerprint {\n\t\t\t\t\tfor _, pj := range c.Jobs[:i] {\n\t\t\t\t\t\ts.insert(pj)\n\t\t\t\t\t}\n"}},
	CaughtBy: []string{"Idempotency/Conflict"},
}, {
	Name:     "cleanup-ignores-horizon",
	Breaks:   []string{mutants.CleanupHorizon},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "if k.at >= before || len(doomed) >= c.Limit {", Replace: "if k.at >= before+1<<60 || len(doomed) >= c.Limit {"}},
	CaughtBy: []string{"Cleanup/OnlyTerminalBeforeHorizon"},
}, {
	Name:   "cleanup-deletes-live",
	Breaks: []string{mutants.CleanupTerminalOnly},
	Edits: []mutants.Edit{{File: "apply.go",
		Find:    "the retention index names job %s, which the replica does not hold\", core.ErrInvalidState, missing)\n\t}\n\tfor _, r := range doomed {",
		Replace: "the retention index names job %s, which the replica does not hold\", core.ErrInvalidState, missing)\n\t}\n\tfor _, r := range s.running {\n\t\tdoomed = append(doomed, r)\n\t}\n\tfor _, r := range doomed {"}},
	CaughtBy: []string{"Cleanup/OnlyTerminalBeforeHorizon"},
}, {
	Name:     "cleanup-keeps-key",
	Breaks:   []string{mutants.CleanupReleasesKey},
	Edits:    []mutants.Edit{{File: "state.go", Find: "\t\tif s.idem[k] == r {\n\t\t\tdelete(s.idem, k)\n\t\t}", Replace: "\t\t_ = k"}},
	CaughtBy: []string{"Idempotency/ReleasedByCleanup"},
}, {
	Name:     "page-repeats-cursor",
	Breaks:   []string{mutants.PagesExactlyOnce},
	Edits:    []mutants.Edit{{File: "read.go", Find: "\t\tif id == f.Cursor {\n\t\t\treturn true\n\t\t}\n", Replace: ""}},
	CaughtBy: []string{"Reads/PaginationAscending", "Reads/PaginationExactPages"},
}, {
	Name:   "queues-share-ready",
	Breaks: []string{mutants.QueueIsolation},
	Edits: []mutants.Edit{
		{File: "flow_ready.go", Find: "{ return s.ready[queue] }", Replace: "{ return s.ready[\"\"] }"},
		{File: "flow_ready.go", Find: "\t\ts.ready[queue] = q", Replace: "\t\ts.ready[\"\"] = q"},
		{File: "flow_ready.go", Find: "delete(s.ready, r.job.Queue)", Replace: "delete(s.ready, \"\")"},
	},
	CaughtBy: []string{"Claim/QueueIsolation"},
}, {
	Name:   "no-signals",
	Breaks: []string{mutants.Notifications},
	Edits: []mutants.Edit{
		{File: "log.go", Find: "\t\tb.notify.signal(q)\n\t\tdelete(b.st.touched, q)", Replace: "\t\tdelete(b.st.touched, q)"},
		{File: "notify.go", Find: "if !known || n.b.hasDue(q, now) {", Replace: "if false && (!known || n.b.hasDue(q, now)) {"},
	},
	CaughtBy: []string{"Capabilities/NotifyOnEnqueue", "Capabilities/NotifyOnFinish"},
}, {
	// The flow rules (flow_*.go). The mutants package lists no flow
	// property yet: the limit and sequence mutants name the nearest one,
	// what a claim may hand out, and the unique-mode one the release of a
	// key.
	Name:     "key-limit-off-by-one",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "flow_limits.go", Find: "f.keyRunning[j.Task][j.LimitKey] >= int64(cfg.MaxRunningPerKey)", Replace: "f.keyRunning[j.Task][j.LimitKey] > int64(cfg.MaxRunningPerKey)"}},
	CaughtBy: []string{"FlowLimits/KeyMaxRunning", "FlowLimits/ClaimCountsTogether"},
}, {
	Name:     "freed-slot-keeps-gate-closed",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "flow_limits.go", Find: "if d < 0 && len(f.closed[j.Task]) > 0 {", Replace: "if false && d < 0 && len(f.closed[j.Task]) > 0 {"}},
	CaughtBy: []string{"FlowLimits/FreedByComplete", "FlowLimits/TaskPassOver"},
}, {
	Name:     "failure-never-holds-sequence",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "\t\tr.job.FinishedAt = c.Now\n\t\tr.holdsSeq = s.holdsOnFailure(r)", Replace: "\t\tr.job.FinishedAt = c.Now\n\t\tr.holdsSeq = false"}},
	CaughtBy: []string{"FlowSequence/HoldOnFailure"},
}, {
	Name:     "terminal-job-keeps-while-active-key",
	Breaks:   []string{mutants.CleanupReleasesKey},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "if r, ok := s.idem[k]; ok && core.HoldsKey(r.job, c.Now) {", Replace: "if r, ok := s.idem[k]; ok {"}},
	CaughtBy: []string{"FlowUnique/WhileActiveFreedBySuccess", "FlowUnique/ByPeriod"},
}}

// bulkMutants break the native bulk step (bulk.go, and the per-job
// transitions of apply.go that it shares with Cancel and DeleteJob): its
// state check beside workers, and its single command.
var bulkMutants = []mutants.Mutant{{
	Name:     "bulk-delete-ignores-running",
	Breaks:   []string{mutants.BulkStateCheck},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "if r.job.State == core.StateRunning && !force {", Replace: "if r.job.State == core.StateRunning && !force && false {"}},
	CaughtBy: []string{"Bulk/DeleteWhileWorkers"},
}, {
	Name:   "bulk-cancel-finished",
	Breaks: []string{mutants.BulkStateCheck},
	Edits: []mutants.Edit{{File: "apply.go", Find: "\tcase core.StateSucceeded, core.StateFailed:\n\t\treturn nil, fmt.Errorf(\"%w: job %s is %s\", core.ErrInvalidState, id, r.job.State)\n",
		Replace: "\tcase core.StateSucceeded, core.StateFailed:\n"}},
	CaughtBy: []string{"Bulk/CancelWhileWorkers"},
}, {
	Name:   "bulk-command-per-job",
	Breaks: []string{mutants.BulkAtomic},
	Edits: []mutants.Edit{{File: "bulk.go",
		Find:    "\tout, err := b.exec(ctx, &command{Op: opBulk, V: bulkVersion, Now: b.stamp(),\n\t\tBulk: &bulkCmd{Action: req.Action, IDs: ids}, Reason: core.CancelReason(req.Reason), Force: req.Force})\n",
		Replace: "\tvar out outcome\n\tfor _, id := range ids {\n\t\tvar one outcome\n\t\tif one, err = b.exec(ctx, &command{Op: opBulk, V: bulkVersion, Now: b.stamp(),\n\t\t\tBulk: &bulkCmd{Action: req.Action, IDs: []string{id}}, Reason: core.CancelReason(req.Reason), Force: req.Force}); err != nil || one.err != nil {\n\t\t\tout.err = one.err\n\t\t\tbreak\n\t\t}\n\t\tout.errs = append(out.errs, one.errs...)\n\t}\n"}},
	CaughtBy: []string{"Bulk/AtomicStep"},
}}

func init() { storeMutants = append(storeMutants, bulkMutants...) }

func TestMutantsCoverProperties(t *testing.T) {
	props := append(slices.Clone(mutants.Properties), mutants.AwaitProperties...)
	mutants.RequireCoverage(t, storeMutants, append(props, mutants.BulkProperties...), 3)
}

// TestMutants runs the suite once per mutant of the replica's code and
// requires each to be caught by the cases it names.
func TestMutants(t *testing.T) {
	mutants.Run(t, mutants.Target{Test: "TestConformanceEmbedded", Args: []string{"-rapid.checks=50", "-rapid.nofailfile"}}, storeMutants)
}
