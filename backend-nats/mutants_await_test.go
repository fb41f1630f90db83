package natsq_test

import "github.com/boson-go/boson/conformance/mutants"

// awaitMutants break the replica's fan-in (await.go, and the counts in
// state.go and apply.go); they join storeMutants.
var awaitMutants = []mutants.Mutant{{
	Name:     "await-terminal-not-counted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "state.go", Find: "if r.waiters != nil && j.State.Terminal() {", Replace: "if r.waiters != nil && false {"}},
	CaughtBy: []string{"Await/AllComplete", "Await/AllFail", "Await/AllCancel", "Await/AllRescueFail", "Await/AllDeadline", "Await/AllBulkCancel"},
}, {
	Name:     "await-deletion-not-counted",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "state.go", Find: "\tif r.waiters != nil {\n\t\ts.countAwaited(r)\n\t}\n\ts.dropWait(j.ID)", Replace: "\ts.dropWait(j.ID)"}},
	CaughtBy: []string{"Await/AllDeleteJob", "Await/AllDeleteQueue"},
}, {
	Name:     "await-terminal-counted-later",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "await.go", Find: "\t\tif !ch.job.State.Terminal() {\n\t\t\tw.open", Replace: "\t\tif true {\n\t\t\tw.open"}},
	CaughtBy: []string{"Await/AlreadyTerminal", "Await/AnyAlreadyTerminal"},
}, {
	Name:     "await-stale-wait-current",
	Breaks:   []string{mutants.AwaitWakes, mutants.AwaitCancelChildren},
	Edits:    []mutants.Edit{{File: "await.go", Find: "return r.job.State == core.StateSleeping && r.job.Lease.Token == w.wait.Token", Replace: "return r.job.State == core.StateSleeping"}},
	CaughtBy: []string{"Await/StaleNotWoken", "Await/CancelChildrenStale"},
}, {
	Name:     "await-children-not-cancelled",
	Breaks:   []string{mutants.AwaitCancelChildren},
	Edits:    []mutants.Edit{{File: "apply.go", Find: "w.wait.CancelChildren && w.current(r) {", Replace: "w.wait.CancelChildren && w.current(r) && false {"}},
	CaughtBy: []string{"Await/CancelChildren", "Await/CancelChildrenByDeadline"},
}, {
	Name:     "await-unknown-child-ignored",
	Breaks:   []string{mutants.AwaitParks},
	Edits:    []mutants.Edit{{File: "await.go", Find: "\t\tif children[i] = s.jobs[id]; children[i] == nil {", Replace: "\t\tif children[i] = s.jobs[id]; children[i] == nil && false {"}, {File: "await.go", Find: "\tfor _, ch := range children {\n", Replace: "\tfor _, ch := range children {\n\t\tif ch == nil {\n\t\t\tcontinue\n\t\t}\n"}},
	CaughtBy: []string{"Await/UnknownChild"},
}, {
	Name:     "await-waiter-deletion-keeps-wait",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "state.go", Find: "\t\ts.countAwaited(r)\n\t}\n\ts.dropWait(j.ID)", Replace: "\t\ts.countAwaited(r)\n\t}"}},
	CaughtBy: []string{"Await/DeleteWaiter", "Await/CleanupWaiter"},
}, {
	Name:     "await-wake-leaves-run-at",
	Breaks:   []string{mutants.AwaitWakes},
	Edits:    []mutants.Edit{{File: "await.go", Find: "\t\t\twr.job.RunAt = s.now\n", Replace: ""}},
	CaughtBy: []string{"Await/AllComplete", "Await/AnyFirst", "Await/RaceChildren"},
}}

func init() { storeMutants = append(storeMutants, awaitMutants...) }
