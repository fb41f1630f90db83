package conformance

import "github.com/boson-go/boson/core"

// flowDeclared: a harness that declares Flow has a backend that implements
// core.FlowController, whose RunningByKey answers on an empty store.
func flowDeclared(e *env) {
	kc := e.runningByKey("t", 0)
	requireEq(e.t, len(kc), 0, "RunningByKey groups on an empty store")
}

// flowUndeclared: a backend whose harness does not declare Flow either
// lacks core.FlowController or reports core.ErrUnsupported from it.
func flowUndeclared(e *env) {
	fc, ok := e.b.(core.FlowController)
	if !ok {
		return
	}
	_, err := fc.RunningByKey(e.ctx, "t", 0)
	e.requireUnsupported(err, "RunningByKey")
}
