package conformance

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// badEnqueues are requests that every backend must refuse with
// ErrInvalidArgument, storing nothing. Names carry characters that break
// SQL, Redis keys and NATS subjects.
var badEnqueues = map[string]func(r *core.EnqueueRequest){
	"QueueSQLQuote":     func(r *core.EnqueueRequest) { r.Queue = "q'; DROP TABLE jobs; --" },
	"QueueRedisHashTag": func(r *core.EnqueueRequest) { r.Queue = "q{slot}" },
	"QueueRedisColon":   func(r *core.EnqueueRequest) { r.Queue = "q:x" },
	"QueueNATSDot":      func(r *core.EnqueueRequest) { r.Queue = "q.x" },
	"QueueNATSWildcard": func(r *core.EnqueueRequest) { r.Queue = "q*" },
	"QueueNATSTail":     func(r *core.EnqueueRequest) { r.Queue = "q>" },
	"QueueSpace":        func(r *core.EnqueueRequest) { r.Queue = "q x" },
	"QueueNonASCII":     func(r *core.EnqueueRequest) { r.Queue = "qé" },
	"QueueLeadingDash":  func(r *core.EnqueueRequest) { r.Queue = "-q" },
	"QueueTooLong":      func(r *core.EnqueueRequest) { r.Queue = strings.Repeat("q", core.MaxNameLength+1) },
	"TaskEmpty":         func(r *core.EnqueueRequest) { r.Task = "" },
	"TaskSQLQuote":      func(r *core.EnqueueRequest) { r.Task = `t"x` },
	"TaskNUL":           func(r *core.EnqueueRequest) { r.Task = "t\x00" },
	"TaskNewline":       func(r *core.EnqueueRequest) { r.Task = "t\nx" },
	"PayloadOversized":  func(r *core.EnqueueRequest) { r.Payload = make([]byte, suiteLimits.MaxPayloadBytes+1) },
	"HeaderEmptyKey":    func(r *core.EnqueueRequest) { r.Headers = map[string]string{"": "v"} },
	"HeaderInvalidUTF8": func(r *core.EnqueueRequest) { r.Headers = map[string]string{"k": "\xff\xfe"} },
	"HeadersOversized": func(r *core.EnqueueRequest) {
		r.Headers = map[string]string{"k": strings.Repeat("v", suiteLimits.MaxHeaderBytes)}
	},
	"PriorityTooLow":       func(r *core.EnqueueRequest) { r.Priority = core.MinPriority - 1 },
	"PriorityTooHigh":      func(r *core.EnqueueRequest) { r.Priority = core.MaxPriority + 1 },
	"MaxAttemptsNegative":  func(r *core.EnqueueRequest) { r.MaxAttempts = -1 },
	"RetryInitialNegative": func(r *core.EnqueueRequest) { r.Retry.Initial = -time.Second },
	"RetryMaxNegative":     func(r *core.EnqueueRequest) { r.Retry.Max = -time.Second },
	"RetryFactorBelowOne":  func(r *core.EnqueueRequest) { r.Retry.Factor = 0.5 },
	"RetryFactorNaN":       func(r *core.EnqueueRequest) { r.Retry.Factor = math.NaN() },
	"RetryFactorInf":       func(r *core.EnqueueRequest) { r.Retry.Factor = math.Inf(1) },
	"RetryJitterNegative":  func(r *core.EnqueueRequest) { r.Retry.Jitter = -0.1 },
	"RetryJitterAboveOne":  func(r *core.EnqueueRequest) { r.Retry.Jitter = 1.5 },
	"MaxDelayNegative":     func(r *core.EnqueueRequest) { r.Cancel.MaxDelay = -time.Second },
	"MaxDurationNegative":  func(r *core.EnqueueRequest) { r.Cancel.MaxDuration = -time.Second },
	"IdempotencyKeyLong":   func(r *core.EnqueueRequest) { r.IdempotencyKey = strings.Repeat("k", core.MaxIdempotencyKeyLength+1) },
	"RunAtBeyond9999":      func(r *core.EnqueueRequest) { r.RunAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
}

// testValidation: every bad input is refused with ErrInvalidArgument and
// leaves nothing behind.
func testValidation(t *testing.T, h Harness) {
	t.Run("Enqueue", func(t *testing.T) {
		for _, name := range sortedKeys(badEnqueues) {
			mutate := badEnqueues[name]
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, h)
				good := req("q", "t")
				bad := req("q", "t")
				mutate(&bad)
				_, err := e.b.Enqueue(e.ctx, []core.EnqueueRequest{good, bad})
				requireErr(t, err, core.ErrInvalidArgument, "Enqueue")
				e.requireEmpty()
			})
		}
	})
	cases(t, h, map[string]func(e *env){
		"EnqueueEmptyBatch": func(e *env) {
			_, err := e.b.Enqueue(e.ctx, nil)
			requireErr(e.t, err, core.ErrInvalidArgument, "Enqueue of no items")
			e.requireEmpty()
		},
		"EnqueueOversizedBatch": func(e *env) {
			reqs := make([]core.EnqueueRequest, suiteLimits.MaxBatch+1)
			for i := range reqs {
				reqs[i] = req("q", "t")
			}
			_, err := e.b.Enqueue(e.ctx, reqs)
			requireErr(e.t, err, core.ErrInvalidArgument, "Enqueue beyond MaxBatch")
			e.requireEmpty()
		},
		"Claim":       validateClaim,
		"Lease":       validateLease,
		"Complete":    validateComplete,
		"Checkpoint":  validateCheckpoint,
		"Filter":      validateFilter,
		"Cleanup":     validateCleanup,
		"Rescue":      validateRescue,
		"QueueConfig": validateQueueConfig,
	})
}

// requireEmpty checks that the backend holds no job and no queue.
func (e *env) requireEmpty() {
	e.t.Helper()
	if n := e.total(); n != 0 {
		e.t.Fatalf("%d jobs stored, want none", n)
	}
	page, err := e.b.ListJobs(e.ctx, core.JobFilter{})
	if err != nil {
		e.t.Fatalf("ListJobs: %v", err)
	}
	if len(page.Jobs) != 0 {
		e.t.Fatalf("ListJobs shows %d jobs, want none", len(page.Jobs))
	}
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	if len(qs) != 0 {
		e.t.Fatalf("ListQueues shows %d queues, want none", len(qs))
	}
}

func validateClaim(e *env) {
	e.enqueueN("q", "t", 3)
	good := core.ClaimRequest{Queue: "q", WorkerID: "w", Limit: 1, LeaseTTL: time.Minute}
	bad := map[string]func(r *core.ClaimRequest){
		"empty queue":      func(r *core.ClaimRequest) { r.Queue = "" },
		"hostile queue":    func(r *core.ClaimRequest) { r.Queue = "q' OR '1'='1" },
		"empty worker":     func(r *core.ClaimRequest) { r.WorkerID = "" },
		"hostile worker":   func(r *core.ClaimRequest) { r.WorkerID = "w.*" },
		"zero limit":       func(r *core.ClaimRequest) { r.Limit = 0 },
		"negative limit":   func(r *core.ClaimRequest) { r.Limit = -1 },
		"limit > MaxBatch": func(r *core.ClaimRequest) { r.Limit = suiteLimits.MaxBatch + 1 },
		"zero ttl":         func(r *core.ClaimRequest) { r.LeaseTTL = 0 },
		"negative ttl":     func(r *core.ClaimRequest) { r.LeaseTTL = -time.Second },
	}
	for _, name := range sortedKeys(bad) {
		r := good
		bad[name](&r)
		jobs, err := e.b.Claim(e.ctx, r)
		requireErr(e.t, err, core.ErrInvalidArgument, "Claim with "+name)
		if len(jobs) != 0 {
			e.t.Fatalf("Claim with %s returned jobs", name)
		}
	}
	requireEq(e.t, e.count(core.JobFilter{})[core.StateQueued], 3, "queued jobs after invalid claims")
}

func validateLease(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	s := e.snap(j.ID)
	for name, l := range map[string]core.Lease{
		"empty job id":   {JobID: "", Token: j.Lease.Token},
		"long job id":    {JobID: strings.Repeat("x", core.MaxNameLength+1), Token: j.Lease.Token},
		"zero token":     {JobID: j.ID, Token: 0},
		"negative token": {JobID: j.ID, Token: -1},
	} {
		_, err := e.b.Heartbeat(e.ctx, l, time.Minute)
		requireErr(e.t, err, core.ErrInvalidArgument, "Heartbeat with "+name)
		_, err = e.b.Fail(e.ctx, core.Failure{Lease: l, Error: "x"})
		requireErr(e.t, err, core.ErrInvalidArgument, "Fail with "+name)
		err = e.b.Sleep(e.ctx, l, e.now().Add(time.Minute))
		requireErr(e.t, err, core.ErrInvalidArgument, "Sleep with "+name)
		_, err = e.b.SaveCheckpoint(e.ctx, l, "step", []byte("v"))
		requireErr(e.t, err, core.ErrInvalidArgument, "SaveCheckpoint with "+name)
		errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: l}})
		if err == nil && (len(errs) != 1 || errs[0] == nil) {
			e.t.Fatalf("Complete with %s: no error", name)
		}
		if err == nil {
			err = errs[0]
		}
		requireErr(e.t, err, core.ErrInvalidArgument, "Complete with "+name)
	}
	for _, ttl := range []time.Duration{0, -time.Second} {
		_, err := e.b.Heartbeat(e.ctx, j.Lease, ttl)
		requireErr(e.t, err, core.ErrInvalidArgument, "Heartbeat with ttl "+ttl.String())
	}
	e.requireUnchanged(s, "invalid fenced calls")
}

func validateComplete(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	_, err := e.b.Complete(e.ctx, nil)
	requireErr(e.t, err, core.ErrInvalidArgument, "Complete of no items")
	items := make([]core.Completion, suiteLimits.MaxBatch+1)
	for i := range items {
		items[i] = core.Completion{Lease: j.Lease}
	}
	_, err = e.b.Complete(e.ctx, items)
	requireErr(e.t, err, core.ErrInvalidArgument, "Complete beyond MaxBatch")
	e.requireState(j.ID, core.StateRunning)

	errs, err := e.b.Complete(e.ctx, []core.Completion{{Lease: j.Lease, Result: make([]byte, suiteLimits.MaxPayloadBytes+1)}})
	if err == nil {
		if len(errs) != 1 {
			e.t.Fatalf("Complete of one item returned %d item errors", len(errs))
		}
		err = errs[0]
	}
	requireErr(e.t, err, core.ErrInvalidArgument, "Complete with an oversized result")
	e.requireState(j.ID, core.StateRunning)
	e.complete(j.Lease, []byte("ok"))
}

func validateCheckpoint(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	for _, step := range []string{"", "a.b", "a b", "a'b", "{a}", strings.Repeat("s", core.MaxNameLength+1)} {
		_, err := e.b.SaveCheckpoint(e.ctx, j.Lease, step, []byte("v"))
		requireErr(e.t, err, core.ErrInvalidArgument, "SaveCheckpoint with step "+step)
	}
	_, err := e.b.SaveCheckpoint(e.ctx, j.Lease, "step", make([]byte, suiteLimits.MaxPayloadBytes+1))
	requireErr(e.t, err, core.ErrInvalidArgument, "SaveCheckpoint with an oversized value")
	if cs := e.checkpoints(j.ID); len(cs) != 0 {
		e.t.Fatalf("invalid checkpoints stored %d values", len(cs))
	}
}

func validateFilter(e *env) {
	e.enqueueN("q", "t", 2)
	for name, f := range map[string]core.JobFilter{
		"hostile queue":  {Queue: "q;--"},
		"hostile task":   {Task: "t*"},
		"unknown state":  {States: []core.JobState{"paused"}},
		"negative limit": {Limit: -1},
		"huge limit":     {Limit: core.MaxPageSize + 1},
		"long cursor":    {Cursor: strings.Repeat("c", core.MaxNameLength+1)},
	} {
		_, err := e.b.ListJobs(e.ctx, f)
		requireErr(e.t, err, core.ErrInvalidArgument, "ListJobs with "+name)
		if f.Limit == 0 && f.Cursor == "" {
			_, err = e.b.CountJobs(e.ctx, f)
			requireErr(e.t, err, core.ErrInvalidArgument, "CountJobs with "+name)
		}
	}
}

func validateCleanup(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.complete(j.Lease, nil)
	e.advance(time.Hour)
	for name, r := range map[string]core.CleanupRequest{
		"zero horizon":     {FinishedBefore: time.Time{}, Limit: 10},
		"zero limit":       {FinishedBefore: e.now(), Limit: 0},
		"limit > MaxBatch": {FinishedBefore: e.now(), Limit: suiteLimits.MaxBatch + 1},
		"hostile queue":    {Queue: "q'", FinishedBefore: e.now(), Limit: 10},
	} {
		n, err := e.b.Cleanup(e.ctx, r)
		requireErr(e.t, err, core.ErrInvalidArgument, "Cleanup with "+name)
		requireEq(e.t, n, 0, "deleted by Cleanup with "+name)
	}
	e.requireState(j.ID, core.StateSucceeded)
}

func validateRescue(e *env) {
	j := e.enqueueClaim(req("q", "t"))
	e.advance(2 * leaseTTL)
	for _, limit := range []int{0, -1, suiteLimits.MaxBatch + 1} {
		_, err := e.b.Rescue(e.ctx, core.RescueRequest{Limit: limit})
		requireErr(e.t, err, core.ErrInvalidArgument, "Rescue with limit "+itoa(limit))
	}
	e.requireState(j.ID, core.StateRunning)
}

func validateQueueConfig(e *env) {
	for name, c := range map[string]core.QueueConfig{
		"empty queue":        {},
		"hostile queue":      {Queue: "q\x00"},
		"negative retention": {Queue: "q", RetentionTTL: -time.Second},
		"negative limit":     {Queue: "q", CleanupLimit: -1},
	} {
		requireErr(e.t, e.b.PutQueueConfig(e.ctx, c), core.ErrInvalidArgument, "PutQueueConfig with "+name)
	}
	e.requireEmpty()
}
