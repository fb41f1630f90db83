package sqltest

import "github.com/boson-go/boson/conformance/mutants"

// AwaitMutants break the fan-in SQL and Go code that both dialects share
// (the fragments of await.go are also those of Postgres's completion and
// claim statements).
var AwaitMutants = []mutants.Mutant{{
	Name:     "await-no-wake",
	Breaks:   []string{mutants.AwaitWakes},
	Edits:    []mutants.Edit{{File: eng("await.go"), Find: "run_at = CASE WHEN {wake} THEN {t} ELSE w.run_at END", Replace: "run_at = w.run_at"}},
	CaughtBy: []string{"Await/AllComplete", "Await/AnyFirst", "Await/RaceChildren"},
}, {
	Name:     "await-wake-ignores-token",
	Breaks:   []string{mutants.AwaitWakes},
	Edits:    []mutants.Edit{{File: eng("await.go"), Find: "w.state = 'sleeping' AND w.token = d.tok\n", Replace: "w.state = 'sleeping'\n"}},
	CaughtBy: []string{"Await/StaleNotWoken"},
}, {
	Name:     "await-all-wakes-early",
	Breaks:   []string{mutants.AwaitWakes},
	Edits:    []mutants.Edit{{File: eng("await.go"), Find: "ELSE w.wait_pending - d.n <= 0 END", Replace: "ELSE w.wait_pending - d.n <= 1 END"}},
	CaughtBy: []string{"Await/AllComplete", "Await/AllFail"},
}, {
	Name:     "await-fail-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: eng("outcome.go"), Find: "\t\t\tif err == nil {\n\t\t\t\terr = e.countAwaited(ctx, q, []string{j.ID}, now, false)\n", Replace: "\t\t\tif false {\n"}},
	CaughtBy: []string{"Await/AllFail"},
}, {
	Name:     "await-cancel-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: eng("fenced.go"), Find: "if err := e.countAwaited(ctx, q, []string{j.ID}, now, false); err != nil {", Replace: "if err := error(nil); err != nil {"}},
	CaughtBy: []string{"Await/AllCancel"},
}, {
	Name:     "await-rescue-fail-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: eng("rescue.go"), Find: "\t\t\t\tif err == nil {\n\t\t\t\t\terr = e.countAwaited(", Replace: "\t\t\t\tif false {\n\t\t\t\t\terr = e.countAwaited("}},
	CaughtBy: []string{"Await/AllRescueFail"},
}, {
	Name:     "await-delete-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: eng("ops_delete.go"), Find: "if err := e.countAwaited(ctx, q, ids, 0, true); err != nil {", Replace: "if err := error(nil); err != nil {"}},
	CaughtBy: []string{"Await/AllDeleteJob", "Await/AllDeleteQueue"},
}, {
	Name:     "await-bulk-cancel-uncounted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: eng("ops_bulk.go"), Find: "if err := e.countAwaited(ctx, q, ids, now, false); err != nil {", Replace: "if err := error(nil); err != nil {"}},
	CaughtBy: []string{"Await/AllBulkCancel"},
}, {
	Name:     "await-retry-recounts",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: eng("await.go"), Find: "const awaitRetrySet = `, awaited_by = NULL`", Replace: "const awaitRetrySet = ``"}},
	CaughtBy: []string{"Await/RetryNoUncount"},
}, {
	Name:     "await-children-left",
	Breaks:   []string{mutants.AwaitCancelChildren},
	Edits:    []mutants.Edit{{File: eng("fenced.go"), Find: "if children, err = e.ccChildren(", Replace: "if _, err = e.ccChildren("}},
	CaughtBy: []string{"Await/CancelChildren", "Await/CancelChildrenByDeadline"},
}, {
	Name:     "await-stale-cancels-children",
	Breaks:   []string{mutants.AwaitWakes},
	Edits:    []mutants.Edit{{File: eng("await.go"), Find: "AND j.wait_cc <> 0 AND j.wait_token = j.token AND w.token = j.token`", Replace: "AND j.wait_cc <> 0`"}},
	CaughtBy: []string{"Await/CancelChildrenStale"},
}, {
	Name:     "await-keeps-claim",
	Breaks:   []string{mutants.AwaitParks},
	Edits:    []mutants.Edit{{File: eng("await.go"), Find: "UPDATE {s}jobs SET state = 'sleeping', run_at = ?, wait_token = ?", Replace: "UPDATE {s}jobs SET state = 'running', run_at = ?, wait_token = ?"}},
	CaughtBy: []string{"Await/ParksLikeSleep"},
}}

// AwaitOwnMutants are caught by the store's own fan-in tests ([Await]),
// not by the suite: a delete of an awaited job that is already terminal
// (so counted when it ended) must count nothing more.
var AwaitOwnMutants = []mutants.Mutant{{
	Name:     "await-delete-counts-terminal",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: eng("await.go"), Find: "\tif deleting {\n\t\tsql +=", Replace: "\tif false {\n\t\tsql +="}},
	CaughtBy: []string{"AllCountsEveryPath"},
}}
