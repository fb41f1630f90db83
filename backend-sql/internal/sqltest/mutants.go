package sqltest

import "github.com/boson-go/boson/conformance/mutants"

// eng names a file of the shared engine as seen from the directory of a
// dialect package's tests (postgres/ or sqliteq/).
func eng(file string) string { return "../internal/engine/" + file }

// EngineMutants break one rule each in the engine's SQL and Go code that
// both dialects share. A dialect's TestMutants runs them together with its
// own (its claim statement, its lock).
var EngineMutants = []mutants.Mutant{{
	Name:     "fence-ignores-token",
	Breaks:   []string{mutants.FenceWrites},
	Edits:    []mutants.Edit{{File: eng("fenced.go"), Find: "if j.State != core.StateRunning || j.Lease.Token != lease.Token {", Replace: "if j.State != core.StateRunning {"}},
	CaughtBy: []string{"Fencing/AfterRescue/Fail", "Fencing/AfterRescue/Sleep", "Fencing/AfterRescue/SaveCheckpoint"},
}, {
	Name:   "fail-unfenced",
	Breaks: []string{mutants.FenceFail},
	Edits: []mutants.Edit{{File: eng("outcome.go"),
		Find:    "j, now, err := e.lockFenced(ctx, q, f.Lease)",
		Replace: "j, now, _, err := e.lockJob(ctx, q, f.Lease.JobID)"}},
	CaughtBy: []string{"Fencing/AfterRescue/Fail", "Fencing/AfterComplete/Fail", "Fencing/AfterCancel/Fail"},
}, {
	Name:   "sleep-unfenced",
	Breaks: []string{mutants.FenceSleep},
	Edits: []mutants.Edit{{File: eng("outcome.go"),
		Find:    "j, now, err := e.lockFenced(ctx, q, lease)",
		Replace: "j, now, _, err := e.lockJob(ctx, q, lease.JobID)"}},
	CaughtBy: []string{"Fencing/AfterRescue/Sleep", "Fencing/AfterComplete/Sleep", "Fencing/AfterCancel/Sleep"},
}, {
	Name:     "rescue-before-expiry",
	Breaks:   []string{mutants.RescueAfterExpiry},
	Edits:    []mutants.Edit{{File: eng("rescue.go"), Find: "WHERE state = 'running' AND lease_expires_at <= ?", Replace: "WHERE state = 'running' AND lease_expires_at <= ? + 1000000000000"}},
	CaughtBy: []string{"Lease/RescueOnlyExpired", mutants.ModelCase},
}, {
	Name:     "rescue-exhausted-requeued",
	Breaks:   []string{mutants.ExhaustedFails},
	Edits:    []mutants.Edit{{File: eng("rescue.go"), Find: "\t\t\tif j.Attempt >= j.MaxAttempts {\n", Replace: "\t\t\tif false {\n"}},
	CaughtBy: []string{"Lease/RescueExhaustedFails"},
}, {
	Name:     "fail-exhausted-requeued",
	Breaks:   []string{mutants.ExhaustedFails},
	Edits:    []mutants.Edit{{File: eng("outcome.go"), Find: "if f.Terminal || j.Attempt >= j.MaxAttempts {", Replace: "if f.Terminal {"}},
	CaughtBy: []string{"Outcome/FailAttemptsExhausted", mutants.ModelCase},
}, {
	Name:     "retry-keeps-max-attempts",
	Breaks:   []string{mutants.RetryGrowsAttempts},
	Edits:    []mutants.Edit{{File: eng("control.go"), Find: "max_attempts = CASE WHEN attempt >= max_attempts THEN attempt + 1 ELSE max_attempts END", Replace: "max_attempts = max_attempts"}},
	CaughtBy: []string{"Retry/SpentBudget"},
}, {
	Name:     "cleanup-ignores-horizon",
	Breaks:   []string{mutants.CleanupHorizon},
	Edits:    []mutants.Edit{{File: eng("cleanup.go"), Find: "AND finished_at < ?\"", Replace: "AND finished_at < ? + 1000000000000\""}},
	CaughtBy: []string{"Cleanup/OnlyTerminalBeforeHorizon"},
}, {
	Name:   "cleanup-deletes-live",
	Breaks: []string{mutants.CleanupTerminalOnly},
	Edits: []mutants.Edit{{File: eng("cleanup.go"),
		Find:    "WHERE state IN ('succeeded', 'failed', 'cancelled') AND finished_at < ?\"",
		Replace: "WHERE (state IN ('succeeded', 'failed', 'cancelled') AND finished_at < ? OR state = 'running')\""}},
	CaughtBy: []string{"Cleanup/OnlyTerminalBeforeHorizon"},
}, {
	Name:   "cleanup-keeps-rows",
	Breaks: []string{mutants.CleanupReleasesKey},
	Edits: []mutants.Edit{{File: eng("cleanup.go"),
		Find:    `deleted, err := q.Exec(ctx, e.render("DELETE FROM {s}jobs WHERE id IN ("+in+")"), ids...)`,
		Replace: `deleted, err := q.Exec(ctx, e.render("UPDATE {s}jobs SET queue = queue WHERE id IN ("+in+")"), ids...)`}},
	CaughtBy: []string{"Idempotency/ReleasedByCleanup"},
}, {
	Name:     "page-repeats-cursor",
	Breaks:   []string{mutants.PagesExactlyOnce},
	Edits:    []mutants.Edit{{File: eng("reads.go"), Find: `where += "id > ?"`, Replace: `where += "id >= ?"`}},
	CaughtBy: []string{"Reads/PaginationAscending", "Reads/PaginationExactPages"},
}, {
	Name:     "no-signals",
	Breaks:   []string{mutants.Notifications},
	Edits:    []mutants.Edit{{File: eng("hub.go"), Find: "\tset[ch] = struct{}{}\n", Replace: "\t_ = set\n"}},
	CaughtBy: []string{"Capabilities/NotifyOnEnqueue", "Capabilities/NotifyOnFinish"},
}, {
	Name:     "flow-key-limit-off-by-one",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: eng("claim_flow.go"), Find: "c.perKey > 0 && c.keyed && fc.counts[kk] >= c.perKey {", Replace: "c.perKey > 0 && c.keyed && fc.counts[kk] > c.perKey {"}},
	CaughtBy: []string{"FlowLimits/KeyMaxRunning", "FlowLimits/KeyPerTask"},
}, {
	// Entering keyed mode counts the task's keys without its running jobs.
	Name:     "flow-keyed-rebuild-misses-running",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: eng("flow.go"), Find: "state = 'running' AND limit_key IS NOT NULL\n\t\tGROUP BY task, limit_key", Replace: "state = 'queued' AND limit_key IS NOT NULL\n\t\tGROUP BY task, limit_key"}},
	CaughtBy: []string{"FlowLimits/KeyAcrossQueues"},
}, {
	// A claim adds nothing to the key rows of a task in keyed mode.
	Name:     "flow-count-skips-key-rows",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: eng("claim_flow.go"), Find: "inc[countKey{\"k\", j.Task, j.LimitKey}]++", Replace: "_ = j.LimitKey"}},
	CaughtBy: []string{"FlowExact/KeyLimit"},
}, {
	// The walk claims a job of a task outside keyed mode past the bound
	// its running count gives, without counting its keys.
	Name:     "flow-walk-never-enters-keyed",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: eng("claim_flow.go"), Find: "!c.keyed && fc.counts[tk] >= c.perKey {", Replace: "!c.keyed && fc.counts[tk] >= c.perKey+1000 {"}},
	CaughtBy: []string{"FlowLimits/KeyAcrossQueues"},
}, {
	Name:     "flow-sequence-ignores-running-member",
	Breaks:   []string{mutants.ClaimDueOnly},
	Edits:    []mutants.Edit{{File: eng("claim_flow.go"), Find: "return before == 0 && busy == 0, err", Replace: "return before == 0, err"}},
	CaughtBy: []string{"FlowSequence/RetryOfReleasedJob"},
}}
