package mutants

// Names under which the SQL store's fan-in mutants were written, each the
// fan-in property of [AwaitProperties] that they break.
const (
	// AwaitCurrentOnly: a stale wait wakes nothing ([AwaitWakes]).
	AwaitCurrentOnly = AwaitWakes
	// AwaitCancelsChildren: cancelling a waiter with CancelChildren
	// cancels the jobs it awaits ([AwaitCancelChildren]).
	AwaitCancelsChildren = AwaitCancelChildren
)
