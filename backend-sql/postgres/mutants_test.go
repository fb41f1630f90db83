package postgres_test

import (
	"slices"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/conformance/mutants"
)

const (
	pgDialect = "../internal/engine/dialect_postgres.go"
	pgFlow    = "../internal/engine/claim_flow_pg.go"
)

// pgMutants break the Postgres claim statement and transactions; the
// engine's shared mutants cover the rest.
var pgMutants = []mutants.Mutant{{
	Name:   "claim-ignores-run-at",
	Breaks: []string{mutants.ClaimDueOnly},
	Edits: []mutants.Edit{{File: pgDialect,
		Find:    "{after}AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= (SELECT t FROM clk)\n",
		Replace: "{after}AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= (SELECT t FROM clk) + 1000000000000\n"}},
	CaughtBy: []string{"Claim/FutureRunAt", "Outcome/FailRetryAt", mutants.ModelCase},
}, {
	Name:     "claim-over-limit",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: pgDialect, Find: "ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED),", Replace: "ORDER BY priority, run_at, id LIMIT ? + 1 FOR UPDATE SKIP LOCKED),"}},
	CaughtBy: []string{"Claim/Limit", mutants.ModelCase},
}, {
	Name:     "claim-without-skip-locked",
	Breaks:   []string{mutants.ClaimExclusive},
	Edits:    []mutants.Edit{{File: pgDialect, Find: "ORDER BY priority, run_at, id LIMIT ? FOR UPDATE SKIP LOCKED),", Replace: "ORDER BY priority, run_at, id LIMIT ?),"}},
	CaughtBy: []string{"Exclusivity/ConcurrentClaimers"},
}, {
	Name:   "token-reused",
	Breaks: []string{mutants.TokensIncrease, mutants.FenceWrites},
	Edits: []mutants.Edit{
		{File: pgDialect, Find: "token = j.token + 1, worker_id", Replace: "token = greatest(j.token, 1), worker_id"},
		{File: pgDialect, Find: "run_id = j.id || '.' || (j.token + 1)::text", Replace: "run_id = j.id || '.' || greatest(j.token, 1)::text"},
	},
	CaughtBy: []string{"Fencing/AfterRescue/Complete", "Reads/RunIDsUnique"},
}, {
	Name:     "queues-mixed",
	Breaks:   []string{mutants.QueueIsolation},
	Edits:    []mutants.Edit{{File: pgDialect, Find: "WHERE queue = ? {after}AND state IN", Replace: "WHERE (queue = ? OR true) {after}AND state IN"}},
	CaughtBy: []string{"Claim/QueueIsolation"},
}, {
	Name:   "batch-split-into-statements",
	Breaks: []string{mutants.BatchAtomic},
	Edits: []mutants.Edit{{File: "../internal/engine/enqueue_postgres.go",
		Find: "\tif !inTx {\n\t\trows, err := pq.C.Query(ctx, sql, args...)",
		Replace: "\tif !inTx && len(jobs) > 1 {\n\t\tif _, _, err := (Postgres{}).EnqueueJobs(ctx, e, q, jobs[:len(jobs)-1], now, false); err != nil {\n\t\t\treturn nil, nil, err\n\t\t}\n" +
			"\t\treturn (Postgres{}).EnqueueJobs(ctx, e, q, jobs[len(jobs)-1:], now, false)\n\t}\n\tif !inTx {\n\t\trows, err := pq.C.Query(ctx, sql, args...)"}},
	CaughtBy: []string{"Idempotency/Conflict", "Idempotency/ConflictWithinBatch"},
}, {
	Name:     "complete-keeps-running-count",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: pgDialect, Find: "SET n = c.n - locked.cnt,", Replace: "SET n = c.n,"}},
	CaughtBy: []string{"FlowLimits/FreedByComplete", "FlowLimits/TaskMaxRunning"},
}, {
	Name:     "await-complete-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: pgDialect, Find: "j.task, j.limit_key, j.sequence_key, j.awaited_by),", Replace: "j.task, j.limit_key, j.sequence_key, NULL::text[] AS awaited_by),"}},
	CaughtBy: []string{"Await/AllComplete", "Await/RaceChildren"},
}, {
	Name:     "await-claim-deadline-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: pgDialect, Find: "RETURNING id, awaited_by),", Replace: "RETURNING id, NULL::text[] AS awaited_by),"}},
	CaughtBy: []string{"Await/AllDeadline"},
}, {
	Name:     "flow-statement-over-limit",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: pgFlow, Find: "SELECT 1 FROM cur WHERE have + cnt > lim)", Replace: "SELECT 1 FROM cur WHERE have + cnt > lim + 1)"}},
	CaughtBy: []string{"FlowLimits/KeyMaxRunning", "FlowLimits/TaskMaxRunning"},
}, {
	Name:     "flow-statement-ignores-marks",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: pgFlow, Find: "\tOR EXISTS (SELECT 1 FROM {s}jobs g JOIN", Replace: "\tOR false AND EXISTS (SELECT 1 FROM {s}jobs g JOIN"}},
	CaughtBy: []string{"FlowLimits/KeyMaxRunning"},
}, {
	// The statement claims for a task outside keyed mode past the bound
	// its running count gives.
	Name:     "flow-statement-ignores-key-bound",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: pgFlow, Find: "max(CASE WHEN f.pk > 0 AND NOT f.keyed THEN f.pk ELSE", Replace: "max(CASE WHEN false THEN f.pk ELSE"}},
	CaughtBy: []string{"FlowLimits/KeyMaxRunning"},
}, {
	// The statement counts no key row of a task in keyed mode.
	Name:     "flow-statement-ignores-keyed",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: pgFlow, Find: "FROM cand c JOIN cfg f ON f.task = c.task WHERE f.keyed AND c.limit_key IS NOT NULL", Replace: "FROM cand c JOIN cfg f ON f.task = c.task WHERE false AND c.limit_key IS NOT NULL"}},
	CaughtBy: []string{"FlowExact/KeyLimit"},
}, {
	// A completion leaves the key rows of a task in keyed mode.
	Name:     "complete-skips-key-rows",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: pgDialect, Find: "UNION ALL SELECT 'k', task, limit_key FROM done WHERE limit_key IS NOT NULL) AS y", Replace: "UNION ALL SELECT 'k', task, limit_key FROM done WHERE false) AS y"}},
	CaughtBy: []string{"FlowExact/KeyLimit"},
}, {
	Name:     "flow-statement-ignores-rates",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: pgFlow, Find: "WHERE c.sequence_key IS NOT NULL OR f.rate > 0)", Replace: "WHERE c.sequence_key IS NOT NULL)"}},
	CaughtBy: []string{"FlowRates/TaskStartsPerSecond"},
}, {
	Name:     "flow-statement-ignores-deadlines",
	Breaks:   []string{mutants.ClaimDueOnly},
	Edits:    []mutants.Edit{{File: pgFlow, Find: "\tOR EXISTS (SELECT 1 FROM {s}jobs WHERE queue = ? AND state IN ('queued', 'sleeping') AND deadline_at IS NOT NULL", Replace: "\tOR false AND EXISTS (SELECT 1 FROM {s}jobs WHERE queue = ? AND state IN ('queued', 'sleeping') AND deadline_at IS NOT NULL"}},
	CaughtBy: []string{"FlowLimits/MaxDelayAtClaim"},
}}

func TestMutantsCoverProperties(t *testing.T) {
	mutants.RequireCoverage(t, slices.Concat(sqltest.EngineMutants, sqltest.AwaitMutants, sqltest.BulkMutants, pgMutants), slices.Concat(mutants.Properties, mutants.AwaitProperties, mutants.BulkProperties), 3)
}

// TestMutants runs the suite once per mutant of the engine's and the
// dialect's code and requires each to be caught by the cases it names.
func TestMutants(t *testing.T) {
	sqltest.PostgresURL(t)
	mutants.Run(t, mutants.Target{Test: "TestConformance", Args: []string{"-rapid.checks=50", "-rapid.nofailfile"}}, slices.Concat(sqltest.EngineMutants, sqltest.AwaitMutants, sqltest.BulkMutants, pgMutants))
}

// TestAwaitMutants runs the store's own fan-in tests once per mutant they
// catch and the suite does not.
func TestAwaitMutants(t *testing.T) {
	mutants.Run(t, mutants.Target{Test: "TestAwait"}, sqltest.AwaitOwnMutants)
}
