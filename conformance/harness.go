package conformance

import (
	"context"
	"testing"

	"github.com/boson-go/boson/core"
)

// Options is what the suite hands a harness when it asks for a backend.
type Options struct {
	// Clock must decide every lease, deadline and due time of the backend.
	// The suite moves it forward instead of sleeping.
	Clock core.Clock
	// Limits are the validation limits the backend must apply.
	Limits core.Limits
}

// Capabilities declares which optional capabilities a backend offers. The
// suite tests each declared capability, and checks that each undeclared one
// returns [core.ErrUnsupported].
type Capabilities struct {
	// Notify: the backend implements core.Notifier and signals enqueues and
	// finished jobs.
	Notify bool
	// TxEnqueue: the backend implements core.TxEnqueuer; BeginTx is required.
	TxEnqueue bool
	// TxControl: the backend implements core.TxController (CancelTx,
	// RetryTx); BeginTx is required.
	TxControl bool
	// Runs: the backend implements core.RunReader (GetRun, ListAllRuns,
	// CountRuns).
	Runs bool
	// Search: the backend implements core.JobSearcher (SearchJobs,
	// CountSearch, FindByIdempotencyKey).
	Search bool
	// Tasks: the backend implements core.TaskLister.
	Tasks bool
	// Delete: the backend implements core.JobDeleter (DeleteJob,
	// DeleteQueue).
	Delete bool
	// Flow: the backend implements core.FlowController and enforces the
	// flow rules at claim: task, queue and per-key concurrency limits,
	// start rates, sequences and the unique modes.
	Flow bool
	// Declare: the backend implements core.QueueDeclarer (CreateQueue,
	// QueueDeclared) and reports declared queues in ListQueues.
	Declare bool
	// AtomicBulk: the backend implements core.BulkActor, and each step of
	// a bulk action takes effect whole: a concurrent reader never sees a
	// step half applied. Without it the suite runs the bulk cases on
	// core.Bulk's per-job fallback, which is correct but not atomic per
	// step.
	AtomicBulk bool
	// Await: the backend implements core.Awaiter (AwaitJobs, JobWait):
	// a job parks on other jobs of the store, in any queue, and every
	// terminal transition of an awaited job counts it and wakes the job
	// whose wait it satisfies, in the same atomic step.
	Await bool
}

// Harness tells the suite how to run against one backend.
type Harness struct {
	// Name labels the backend in test names and benchmark output.
	Name string
	// New returns a fresh backend, isolated from every other one New
	// returned (its own schema, key prefix, namespace or file), that uses
	// opts.Clock and opts.Limits. It registers its own cleanup with
	// t.Cleanup. New is called from parallel tests.
	New func(t testing.TB, opts Options) core.QueueBackend
	// Capabilities lists the optional capabilities the backend offers.
	Capabilities Capabilities
	// FlowExactJobs, when positive, is how many jobs each FlowExact race
	// runs through its 8 claimers instead of 2,000. Lower it only where
	// the store is too slow for the full race (say, a pure-Go store under
	// the race detector), and run the full size elsewhere.
	FlowExactJobs int
	// BeginTx opens a transaction of the store's own type on the store
	// behind b, for EnqueueTx, CancelTx and RetryTx. Required when
	// Capabilities.TxEnqueue or Capabilities.TxControl is set.
	BeginTx func(ctx context.Context, t testing.TB, b core.QueueBackend) (tx any, commit, rollback func() error)
}
