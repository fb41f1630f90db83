package mutants

// The fan-in properties (core.Awaiter) that a store's await mutants
// break. They are not in [Properties], which every store's mutants must
// cover: a store without fan-in has none of them. [Run] accepts them.
const (
	// AwaitCounts: every terminal path of an awaited job counts it once.
	AwaitCounts = "every terminal path counts an awaited job once"
	// AwaitWakes: the count that satisfies a current wait wakes its job,
	// once.
	AwaitWakes = "a satisfied current wait wakes its job once"
	// AwaitCurrentOnly: a stale wait wakes and cancels nothing.
	AwaitCurrentOnly = "a stale wait wakes and cancels nothing"
	// AwaitCancelsChildren: cancelling a waiter with CancelChildren
	// cancels the jobs it awaits.
	AwaitCancelsChildren = "cancelling a waiter cancels its children"
)

// AwaitProperties lists the fan-in properties, for [RequireCoverage] in
// the mutant tests of a store that implements core.Awaiter.
var AwaitProperties = []string{AwaitCounts, AwaitWakes, AwaitCurrentOnly, AwaitCancelsChildren}
