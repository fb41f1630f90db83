// Package conformance is the shared test suite that every boson backend
// runs, and the benchmarks that compare them.
//
// A backend conforms to [core.QueueBackend] when [Run] passes against it.
// The suite covers enqueue (single, batch, validation of every input,
// idempotency, rate limits), claim order and due times, exclusivity under
// concurrent claimers, leases and rescue, fencing of every mutation,
// outcomes and run rows, durable sleeps, checkpoints, cancel and retry,
// cancellation deadlines, reads and pagination, task and queue configs,
// retention, Close, aliasing of returned values, the optional capabilities,
// flow control, fan-in, and a model-based test of random operation sequences.
//
// # Running the suite against an adapter
//
// An adapter's own module adds one test file. This is a complete one for a
// hypothetical Redis-backed package example.com/myqueue:
//
//	package myqueue_test
//
//	import (
//		"context"
//		"testing"
//
//		"example.com/myqueue"
//		"github.com/boson-go/boson/conformance"
//		"github.com/boson-go/boson/conformance/testenv"
//		"github.com/boson-go/boson/core"
//	)
//
//	// harness tells the suite how to make an isolated backend.
//	func harness() conformance.Harness {
//		return conformance.Harness{
//			Name: "myqueue",
//			New: func(t testing.TB, opts conformance.Options) core.QueueBackend {
//				url := testenv.Redis(t) // env URL, a local redis-server, Docker, or skip
//				b, err := myqueue.Open(context.Background(), myqueue.Options{
//					URL:    url,
//					Prefix: testenv.UniqueName(t, "conf"), // isolates this backend
//					Clock:  opts.Clock,                    // every decision uses the suite's clock
//					Limits: opts.Limits,
//				})
//				if err != nil {
//					t.Fatal(err)
//				}
//				t.Cleanup(func() { _ = b.Close() }) // the suite may have closed it already
//				return b
//			},
//			// Declare only what the backend offers: the suite checks that
//			// what is not declared reports core.ErrUnsupported.
//			Capabilities: conformance.Capabilities{Notify: true},
//		}
//	}
//
//	func TestConformance(t *testing.T) { conformance.Run(t, harness()) }
//
//	func BenchmarkConformance(b *testing.B) { conformance.Bench(b, harness()) }
//
// Run it with the race detector:
//
//	go test -race -run TestConformance ./...
//	go test -run '^$' -bench BenchmarkConformance ./...
//
// # What the suite expects of a harness
//
//   - New is called from parallel tests and returns a backend isolated from
//     every other (its own schema, key prefix, namespace or file) that uses
//     opts.Clock for every decision and applies opts.Limits. The suite's
//     limits are small (4 KiB payloads, 1 KiB headers, batches of 1,000)
//     so that validation cases can exceed them.
//   - The clock is a [core.ManualClock] that starts millisecond aligned and
//     only moves in whole milliseconds; times must round-trip exactly at
//     that precision. No case sleeps to wait for time.
//   - The cleanup New registers must tolerate a backend that the suite
//     already closed (the Lifecycle/Close case closes it).
//   - Capabilities.TxEnqueue and Capabilities.TxControl need BeginTx,
//     which opens a transaction of the store's own type on the store
//     behind the backend. The TxControl area checks [core.TxController]:
//     CancelTx and RetryTx change nothing that others see until the
//     commit, and nothing at all after a rollback; a running job's lease
//     works until the cancel commits and fails with [core.ErrLeaseLost]
//     after it. While its transaction is open a case only reads.
//   - Capabilities.Runs, Search, Tasks and Delete declare the operations
//     interfaces [core.RunReader], [core.JobSearcher], [core.TaskLister]
//     and [core.JobDeleter]; the areas of the same names test them, and
//     the cases of each use the others where the harness declares them
//     too (a deleted job's runs are gone from GetRun, its key from
//     FindByIdempotencyKey). The Bulk area runs [core.Bulk] on a backend
//     that declares Search (and Delete, for bulk deletes): cancel, retry
//     and delete by filter in bounded steps, with exact counts while
//     workers claim (a retry's jobs claimed again at once, a delete that
//     leaves alone the jobs claimed since its search). A backend that
//     implements [core.BulkActor] runs those steps itself, so the same
//     cases test its BulkStep.
//   - Capabilities.AtomicBulk declares that BulkStep takes effect whole;
//     Bulk/AtomicStep runs a cancel, a retry and a delete in steps of
//     [core.MaxPageSize] while a reader counts without pause, and fails
//     on any count that shows a step half applied.
//   - Capabilities.Flow declares [core.FlowController] and every flow rule
//     at claim. The areas FlowLimits, FlowRates, FlowSequence, FlowUnique,
//     FlowReads and FlowExact test it: task, queue and per-key concurrency
//     limits (held-back jobs passed over, the jobs of one claim counted
//     together, config changes at the next claim, slots freed by complete,
//     fail, retry, sleep, cancel, rescue and delete); start rates per task
//     and per key in one-second windows aligned to whole seconds of the
//     suite's clock (the clock starts on a whole second); sequences (id
//     order, one at a time, HoldSequenceOnFailure, cancel, delete, rescue
//     and sleep); the unique modes, with Retry, bulk retry and RetryTx
//     refused with [core.ErrIdempotencyConflict] when another job holds
//     the key, and FindByIdempotencyKey returning the holder; the flow
//     fields of every read, JobSearch.LimitKey and SequenceKey, and
//     RunningByKey; the validation of every flow input. FlowExact races 8
//     claimers over 2,000 jobs per limit (Harness.FlowExactJobs may lower it) and checks, by the store's own
//     counts sampled during the race and by the claimers' record, that no
//     limit is exceeded at any instant. A harness that does not declare
//     Flow runs none of those areas; its backend must lack
//     [core.FlowController] or report [core.ErrUnsupported] from it.
//   - Capabilities.Declare declares [core.QueueDeclarer]; the Declare
//     area checks that CreateQueue declares a queue once (exactly one of
//     racing calls reports created, with equal or different configs), is
//     idempotent on a matching config, refuses another with
//     [core.ErrQueueConflict] changing nothing, keeps a paused queue
//     paused, that PutQueueConfig and jobs declare nothing, that
//     ListQueues reports Declared, and (with Delete) that a finished
//     DeleteQueue undeclares the queue. Undeclared, CreateQueue and
//     QueueDeclared must return [core.ErrUnsupported].
//   - Capabilities.Await declares [core.Awaiter] (fan-in); the Await
//     area checks that AwaitJobs parks the job as a durable sleep does
//     (run ended as sleeping, lease fenced, no attempt consumed, not
//     claimable, not rescued), that an all-wait wakes when the last
//     awaited job ends and an any-wait at the first, by every path that
//     ends a job (Complete, a Fail without retry, Cancel, a deadline,
//     Rescue out of attempts, DeleteJob, DeleteQueue, a bulk cancel),
//     that each job counts once (Retry and Cleanup do not count it
//     again), that a wait satisfied at once parks the job due now, that
//     Until bounds the wait and that a wait left behind by a later claim
//     wakes and cancels nothing; CancelChildren, a second wait replacing
//     the first, JobWait's fields, and races of 8 workers completing
//     children while the wait begins or ends (exactly one wake, no lost
//     wake). A stale lease, an unknown awaited job and an invalid request
//     store nothing and keep the claim. Undeclared, AwaitJobs and JobWait
//     must return [core.ErrUnsupported] (or the backend type lack them).
//
// Notifications that a harness does not declare: [core.SubscribeQueue]
// must report ok=false, or, where the backend type implements
// [core.Notifier] anyway, Subscribe must return a usable stop function (a
// nil channel is fine). The suite never waits for a signal it was not
// promised. Transactional enqueue that is not declared must make
// [core.EnqueueTx] return an error wrapping [core.ErrUnsupported], and
// transactional control that is not declared must do the same for
// [core.CancelTx] and [core.RetryTx]. An
// operations capability that is not declared must be missing from the
// backend's type, or each of its methods must return an error wrapping
// [core.ErrUnsupported].
//
// # Names, selection and reproduction
//
// Every case is a subtest Area/Case (for example Claim/Order or
// Fencing/AfterRescue/Complete) that calls t.Parallel and gets its own
// backend, so -run selects single cases:
//
//	go test -run 'TestConformance/Fencing/AfterCancel/' ./...
//
// The model-based case Model/StateMachine uses pgregory.net/rapid. On a
// failure it prints the shrunk operation sequence and a seed; replay it with
//
//	go test -run 'TestConformance/Model/StateMachine$' -rapid.seed=N
//
// -rapid.checks=N changes how many sequences run (100 by default, 20 with
// -short). rapid also saves a failing sequence under testdata/rapid of the
// package under test and prints -rapid.failfile=... to replay it exactly;
// -rapid.nofailfile turns that off.
//
// # Benchmarks
//
// [Bench] runs Enqueue/single, Enqueue/batch100, ClaimComplete/single,
// ClaimComplete/batch100 and EndToEnd on the system clock, and reports
// jobs/s; the names are stable for benchstat. A harness that declares Flow
// also runs FlowClaim/saturated10 against FlowClaim/saturated10000 (the
// cost of a claim beside 10 or 10,000 saturated limit keys) and
// FlowDrain/perKeyLimit against FlowDrain/noLimit (a drain over 100 keys
// with an unsaturated per-key limit, and without); ns/op is per claimed
// job, so each pair reads as a ratio.
// A harness that declares Await also runs Await/fanIn1000 (ns/op from a
// wait on 1,000 children, completed in batches of 100, to the claim of
// the woken job) and Await/completeWaited against Await/completeUnwaited
// (ns/op per child completed, with a wait on every child and without).
//
// # Test environment
//
// Package [github.com/boson-go/boson/conformance/testenv] finds Postgres,
// Redis and NATS for store-backed tests: an environment URL, a server the
// test starts itself, a container, or a one-line skip.
package conformance
