package redisq

import "github.com/boson-go/boson/conformance/mutants"

// bulkMutants break the bulk step (luaBulk and BulkStep): its state check
// under concurrent workers, and its single script call. They join
// storeMutants, and the bulk properties (mutants.BulkProperties) join
// redisProperties.
var bulkMutants = []mutants.Mutant{{
	Name:     "bulk-delete-forces",
	Breaks:   []string{mutants.BulkStateCheck},
	Edits:    []mutants.Edit{{File: "lua_control.go", Find: `e, w = deleteone(ks[q], id, opt == '1', del[q])`, Replace: `e, w = deleteone(ks[q], id, true, del[q])`}},
	CaughtBy: []string{"Bulk/DeleteWhileWorkers"},
}, {
	Name:   "bulk-cancel-trusts-search",
	Breaks: []string{mutants.BulkStateCheck},
	Edits: []mutants.Edit{{File: "lua_control.go",
		Find:    "    e, w = cancelone(ks[q], id, now, opt)\n",
		Replace: "    local r = getk(ks[q], id)\n    if r and r[RST] ~= CANCELLED then finish(ks[q], id, r, CANCELLED, now, RUN_CANCELLED, opt) end\n    w = true\n"}},
	CaughtBy: []string{"Bulk/CancelWhileWorkers"},
}, {
	Name:   "bulk-script-per-job",
	Breaks: []string{mutants.BulkAtomic},
	Edits: []mutants.Edit{{File: "bulk.go",
		Find: "\tout, err := b.run(ctx, scriptBulk, jobs[0].Queue, args...)\n",
		Replace: "\tvar outs []any\n\tfor i := 2; i < len(args) && err == nil; i += 2 {\n" +
			"\t\tvar o any\n\t\to, err = b.run(ctx, scriptBulk, jobs[0].Queue, args[0], args[1], args[i], args[i+1])\n" +
			"\t\ta, _ := o.([]any)\n\t\touts = append(outs, a...)\n\t}\n\tvar out any = outs\n"}},
	CaughtBy: []string{"Bulk/AtomicStep"},
}}

func init() {
	storeMutants = append(storeMutants, bulkMutants...)
	redisProperties = append(redisProperties, mutants.BulkProperties...)
}
