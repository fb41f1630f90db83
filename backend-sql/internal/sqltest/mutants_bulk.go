package sqltest

import "github.com/boson-go/boson/conformance/mutants"

// BulkMutants break the engine's native bulk step (core.BulkActor), for
// both stores: its state check under concurrent workers, and its single
// transaction.
var BulkMutants = []mutants.Mutant{{
	Name:     "bulk-delete-ignores-running",
	Breaks:   []string{mutants.BulkStateCheck},
	Edits:    []mutants.Edit{{File: eng("ops_bulk.go"), Find: "if st == core.StateRunning && !req.Force {", Replace: "if st == core.StateRunning && !req.Force && false {"}},
	CaughtBy: []string{"Bulk/DeleteWhileWorkers"},
}, {
	Name:   "bulk-cancel-finished",
	Breaks: []string{mutants.BulkStateCheck},
	Edits: []mutants.Edit{{File: eng("ops_bulk.go"), Find: "\t\tcase core.StateSucceeded, core.StateFailed:\n\t\t\treturn bulkRefuse",
		Replace: "\t\tcase core.StateSucceeded, core.StateFailed:\n\t\t\treturn bulkChange"}},
	CaughtBy: []string{"Bulk/CancelWhileWorkers"},
}, {
	Name:   "bulk-step-per-job",
	Breaks: []string{mutants.BulkAtomic},
	Edits: []mutants.Edit{{File: eng("ops_bulk.go"),
		Find:    "\t\terr = e.st.WriteTx(ctx, func(q Querier) error {\n\t\t\teff = bulkEffects{}\n\t\t\treturn e.bulkIn(ctx, q, req, ids, &eff)\n\t\t})\n",
		Replace: "\t\teff = bulkEffects{}\n\t\tfor _, id := range ids {\n\t\t\tif err = e.st.WriteTx(ctx, func(q Querier) error {\n\t\t\t\treturn e.bulkIn(ctx, q, req, []string{id}, &eff)\n\t\t\t}); err != nil {\n\t\t\t\tbreak\n\t\t\t}\n\t\t}\n"}},
	CaughtBy: []string{"Bulk/AtomicStep"},
}}
