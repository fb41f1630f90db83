package sqliteq_test

import (
	"slices"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/conformance/mutants"
)

const (
	sqliteClaim   = "../internal/engine/claim.go"
	sqliteDialect = "../internal/engine/dialect_sqlite.go"
	sqliteFlow    = "../internal/engine/claim_flow_sqlite.go"
)

// sqliteMutants break SQLite's claim and its one writer's transactions;
// the engine's shared mutants cover the rest.
var sqliteMutants = []mutants.Mutant{{
	Name:   "claim-ignores-run-at",
	Breaks: []string{mutants.ClaimDueOnly},
	Edits: []mutants.Edit{
		{File: sqliteClaim, Find: "AND run_at <= ?\n\t\tAND (deadline_at IS NULL OR deadline_at > ?)", Replace: "AND run_at <= ? + 1000000000000\n\t\tAND (deadline_at IS NULL OR deadline_at > ?)"},
		{File: sqliteDialect, Find: "state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= ?),", Replace: "state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= ? + 1000000000000),"},
	},
	CaughtBy: []string{"Claim/FutureRunAt", "Outcome/FailRetryAt", mutants.ModelCase},
}, {
	Name:     "claim-over-limit",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: sqliteClaim, Find: "ORDER BY priority, run_at, id LIMIT ?`", Replace: "ORDER BY priority, run_at, id LIMIT ? + 1`"}},
	CaughtBy: []string{"Claim/Limit", mutants.ModelCase},
}, {
	Name:   "token-reused",
	Breaks: []string{mutants.TokensIncrease, mutants.FenceWrites},
	Edits: []mutants.Edit{
		{File: sqliteClaim, Find: "Token: j.Lease.Token + 1, ExpiresAt", Replace: "Token: max(j.Lease.Token, 1), ExpiresAt"},
		{File: sqliteClaim, Find: "token = token + 1, worker_id = ?", Replace: "token = max(token, 1), worker_id = ?"},
	},
	CaughtBy: []string{"Fencing/AfterRescue/Complete", "Reads/RunIDsUnique"},
}, {
	Name:   "queues-mixed",
	Breaks: []string{mutants.QueueIsolation},
	Edits: []mutants.Edit{{File: sqliteClaim,
		Find:    "FROM {s}jobs INDEXED BY jobs_claim WHERE queue = ? AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= ?\n",
		Replace: "FROM {s}jobs WHERE (queue = ? OR 1) AND state IN ('queued', 'sleeping') AND seq_gate = 0 AND key_gate = 0 AND run_at <= ?\n"}},
	CaughtBy: []string{"Claim/QueueIsolation"},
}, {
	Name:     "failed-transaction-commits",
	Breaks:   []string{mutants.BatchAtomic},
	Edits:    []mutants.Edit{{File: "../internal/engine/store_sql.go", Find: "\t\t_ = tx.Rollback()\n\t\treturn err", Replace: "\t\t_ = tx.Commit()\n\t\treturn err"}},
	CaughtBy: []string{"Idempotency/Conflict", "Idempotency/ConflictWithinBatch"},
}, {
	Name:     "await-complete-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "../internal/engine/complete.go", Find: "\t\t\tif awaited {\n", Replace: "\t\t\tif false {\n"}},
	CaughtBy: []string{"Await/AllComplete", "Await/RaceChildren"},
}, {
	Name:     "await-claim-deadline-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: sqliteClaim, Find: "\tif err := e.countAwaited(ctx, q, ids, now, false); err != nil {\n\t\treturn err\n\t}\n\tif len(waits) == 0 {", Replace: "\tif len(waits) == 0 {"}},
	CaughtBy: []string{"Await/AllDeadline"},
}, {
	Name:     "flow-claim-over-limit",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: sqliteFlow, Find: "if fc.counts[k]+n > limit {", Replace: "if fc.counts[k]+n > limit+1 {"}},
	CaughtBy: []string{"FlowLimits/TaskMaxRunning"},
}, {
	// The claim takes jobs of a task outside keyed mode past the bound its
	// running count gives.
	Name:     "flow-claim-ignores-key-bound",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: sqliteFlow, Find: "if c.perKey > 0 && !c.keyed {", Replace: "if false && c.perKey > 0 && !c.keyed {"}},
	CaughtBy: []string{"FlowLimits/KeyMaxRunning"},
}, {
	// A transition leaves the key rows of a task in keyed mode.
	Name:     "transition-skips-key-rows",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "../internal/engine/flow.go", Find: "\t\t\t\tdec[countKey{\"k\", r.task, r.limitKey}]++", Replace: "\t\t\t\t_ = r.limitKey"}},
	CaughtBy: []string{"FlowExact/KeyLimit"},
}, {
	Name:     "flow-claim-ignores-rates",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: sqliteFlow, Find: "if len(starts) > 0 {", Replace: "if len(starts) > 0 && false {"}},
	CaughtBy: []string{"FlowRates/TaskStartsPerSecond"},
}, {
	Name:     "flow-claim-ignores-deadlines",
	Breaks:   []string{mutants.ClaimDueOnly},
	Edits:    []mutants.Edit{{File: sqliteFlow, Find: "\tAND NOT EXISTS (SELECT 1 FROM {s}jobs INDEXED BY jobs_claim_deadline WHERE queue = ?", Replace: "\tAND NOT EXISTS (SELECT 1 FROM {s}jobs INDEXED BY jobs_claim_deadline WHERE false AND queue = ?"}},
	CaughtBy: []string{"FlowLimits/MaxDelayAtClaim"},
}}

// sqliteProperties are the properties the mutants must cover. SQLite has
// one writer connection whose transactions take the write lock at BEGIN,
// and a claim reads and writes under it; SQLite refuses a write from a
// transaction whose snapshot is stale, so no one-place edit of the claim
// hands a job to two claims (reading through the reader pool inside the
// transaction, for one, still reads after the last commit). That property
// has no mutant here.
var sqliteProperties = slices.DeleteFunc(slices.Clone(mutants.Properties), func(p string) bool { return p == mutants.ClaimExclusive })

func TestMutantsCoverProperties(t *testing.T) {
	mutants.RequireCoverage(t, slices.Concat(sqltest.EngineMutants, sqltest.AwaitMutants, sqltest.BulkMutants, sqliteMutants), slices.Concat(sqliteProperties, mutants.AwaitProperties, mutants.BulkProperties), 3)
}

// TestMutants runs the suite once per mutant of the engine's and the
// dialect's code and requires each to be caught by the cases it names.
func TestMutants(t *testing.T) {
	mutants.Run(t, mutants.Target{Test: "TestConformance", Args: []string{"-rapid.checks=50", "-rapid.nofailfile"}}, slices.Concat(sqltest.EngineMutants, sqltest.AwaitMutants, sqltest.BulkMutants, sqliteMutants))
}

// TestAwaitMutants runs the store's own fan-in tests once per mutant they
// catch and the suite does not.
func TestAwaitMutants(t *testing.T) {
	mutants.Run(t, mutants.Target{Test: "TestAwait"}, sqltest.AwaitOwnMutants)
}
