package mem

import (
	"time"

	"github.com/boson-go/boson/core"
)

// jobRec is the backend's record of one job: its body while the job is
// active, or the body frozen into bytes once it finished (see frozen.go),
// and its positions in the structures that index it.
type jobRec struct {
	// jobBody is nil while the job is frozen. Code that may meet a
	// finished job reads it through view.
	*jobBody
	frozen []byte

	id      string // the job's id, also while it is frozen
	deleted bool   // deleted, but still in an id index until it compacts
	// awaited: the job is awaited by a wait that has not counted it yet
	// (store.edges); waiting: the job has a wait (store.waits). See
	// await.go.
	awaited, waiting bool
	final            int8 // while frozen, the state, as an index of core.AllStates
	// The indexes of the job's queue and task and the counters of its
	// (queue, task) pair, resolved once when the job is stored.
	q     *queueState
	t     *taskState
	tally *stateCounts

	// seq numbers the records in the order they were stored, which is also
	// the order of their ids (ids are made under the lock, in that order):
	// the heaps break ties with it instead of comparing ids.
	seq uint64
	// Positions in the heaps, by slot (see heaps.go); -1 when absent.
	pos [nSlots]int32
	// fifo is the position in the FIFO of the job's ready lane, or -1.
	fifo int32
	// fl is the flow state of a job with a limit or sequence key or that
	// met a gate (see flow.go); nil for the others.
	fl *flowRec
}

// jobBody is the job itself, its runs and checkpoints.
type jobBody struct {
	job core.Job
	// runs usually points into runBuf: most jobs run once, and then their
	// run costs no allocation of its own.
	runs        []core.Run
	runBuf      [1]core.Run
	checkpoints map[string]core.Checkpoint

	// deadline caches core.Deadline(job) while the record is in the
	// deadline heap, so that the heap order cannot change behind its back.
	deadline time.Time
}

// init marks a new record as filed nowhere.
func (r *jobRec) init() {
	r.pos = noPos
	r.fifo = -1
}

// queueState indexes the jobs of one queue.
type queueState struct {
	name      string
	ready     readyQueue // queued or sleeping, due: claim order
	scheduled jobHeap    // queued or sleeping, RunAt still ahead
	finished  jobHeap    // terminal, by finish time
	counts    stateCounts
	ids       idIndex
	wake      wakeTimer // signals when the next scheduled job comes due

	// Flow control (see flow.go): the gates of its jobs' tasks and limit
	// keys, its sequences, and the gates to fill when a second begins.
	taskGates map[*taskState]*gate
	keyGates  map[*keyState]*gate
	seqs      map[string]*seqState
	rateWaits []*gate
	nextWait  int64
}

// taskState indexes the jobs of one task.
type taskState struct {
	counts  stateCounts
	runs    runCounts
	runTime time.Duration
	// created holds, sorted, the creation times of the task's jobs created
	// within about the last second with the number of jobs created at each,
	// for MaxEnqueuePerSecond; nCreated is the sum of those numbers.
	created  []createdAt
	nCreated int
	ids      idIndex

	// Flow control (see flow.go): the limits of its config, its claims in
	// the current second, its limit keys and its gates (one per queue).
	flow   flowLimits
	starts window
	keys   map[string]*keyState
	linger []*keyState // keys without jobs, kept for this second's claims
	gates  []*gate
}

// pairKey names one (queue, task) pair, the finest grain of the counters.
type pairKey struct{ queue, task string }

// idemKey is the scope of an idempotency key.
type idemKey struct{ queue, key string }

// store is all the state of a Backend. Every method assumes the Backend's
// mutex is held.
type store struct {
	// running holds the running jobs by id, the only ones a lease can
	// fence: a small map that stays in the cache.
	running      map[string]*jobRec
	queues       map[string]*queueState
	tasks        map[string]*taskState
	pairs        map[pairKey]*stateCounts
	idem         map[idemKey]*jobRec
	taskConfigs  map[string]core.TaskConfig
	queueConfigs map[string]core.QueueConfig
	// declared holds the queues declared with CreateQueue; each also has
	// a config in queueConfigs.
	declared map[string]bool

	leases    jobHeap // running jobs by lease expiry
	deadlines jobHeap // active jobs with a cancellation deadline, by deadline
	finished  jobHeap // terminal jobs by finish time
	ids       idIndex // every job by id: how a job is found
	seq       uint64  // the seq of the last stored record

	// While hold is set (during one batch call), signals are collected in
	// held and sent once each by release.
	hold bool
	held []string
	// claimed is Claim's scratch list of the records it claimed.
	claimed []*jobRec
	// arena holds frozen jobs.
	arena []byte
	// waits holds the latest wait of each job that began one, by job id;
	// edges, the waits that have yet to count each awaited job, by the
	// awaited job's id (see await.go). Both are nil until the first wait.
	waits map[string]*waitRec
	edges map[string][]*waitRec

	// signal is called with the queue of a job that became claimable (or
	// will at its RunAt) or finished.
	signal func(queue string)
	// scheduled, when set, is called with the queue of a job filed in its
	// scheduled heap, due at at.
	scheduled func(queue string, q *queueState, at time.Time)
}

func newStore() *store {
	return &store{
		running:      map[string]*jobRec{},
		queues:       map[string]*queueState{},
		tasks:        map[string]*taskState{},
		pairs:        map[pairKey]*stateCounts{},
		idem:         map[idemKey]*jobRec{},
		taskConfigs:  map[string]core.TaskConfig{},
		queueConfigs: map[string]core.QueueConfig{},
		declared:     map[string]bool{},
		leases:       jobHeap{slot: slotLease},
		deadlines:    jobHeap{slot: slotDeadline},
		finished:     jobHeap{slot: slotFin},
		ids:          idIndex{keyed: true},
		signal:       func(string) {},
	}
}

func (s *store) queue(name string) *queueState {
	q := s.queues[name]
	if q == nil {
		q = &queueState{name: name, scheduled: jobHeap{slot: slotSched}, finished: jobHeap{slot: slotQueueFin}}
		s.queues[name] = q
	}
	return q
}

func (s *store) task(name string) *taskState {
	t := s.tasks[name]
	if t == nil {
		t = &taskState{}
		s.tasks[name] = t
	}
	return t
}

func (s *store) pair(queue, task string) *stateCounts {
	k := pairKey{queue, task}
	c := s.pairs[k]
	if c == nil {
		c = &stateCounts{}
		s.pairs[k] = c
	}
	return c
}

// Every change of a job follows one pattern, which keeps the indexes right:
//
//	old := r.job.State
//	s.detach(r)           // out of every heap
//	...change r.job...    // state, RunAt, lease, FinishedAt: the heap keys
//	s.attach(r, old, now) // into the heaps the new state calls for; counters move
//
// A brand-new job is attached with old = "".

// detach removes r from every heap it is in.
func (s *store) detach(r *jobRec, now time.Time) {
	q := r.q
	q.ready.remove(r)
	if r.fl != nil {
		s.unroute(r, now)
	}
	q.scheduled.remove(r)
	q.finished.remove(r)
	if r.pos[slotLease] >= 0 {
		s.leases.remove(r)
		delete(s.running, r.job.ID)
	}
	s.deadlines.remove(r)
	s.finished.remove(r)
}

// attach files r in the heaps its state calls for, moves the counters from
// old to its new state, and signals subscribers of its queue when the job
// became claimable (now or at its RunAt) or finished.
func (s *store) attach(r *jobRec, old core.JobState, now time.Time) {
	j := &r.job
	q := r.q
	if old != j.State {
		t, p := r.t, r.tally
		if old != "" {
			q.counts.add(old, -1)
			t.counts.add(old, -1)
			p.add(old, -1)
		}
		q.counts.add(j.State, 1)
		t.counts.add(j.State, 1)
		p.add(j.State, 1)
		if r.fl != nil {
			s.flowMove(r, old)
		}
	}
	switch {
	case j.State == core.StateQueued || j.State == core.StateSleeping:
		if j.RunAt.After(now) {
			s.fileScheduled(r)
			s.notify(j.Queue)
		} else {
			s.offer(r, now)
		}
		s.fileDeadline(r)
	case j.State == core.StateRunning:
		s.leases.add(r, j.Lease.ExpiresAt)
		s.running[j.ID] = r
		s.fileDeadline(r)
	case j.State.Terminal():
		s.finished.add(r, j.FinishedAt)
		q.finished.add(r, j.FinishedAt)
		s.notify(j.Queue)
	}
	if old != j.State {
		if old == core.StateRunning && (len(r.t.gates) > 0 || r.fl != nil) {
			s.freed(r, now)
		}
		if r.fl != nil && r.fl.sq != nil {
			s.advance(r.fl.sq, now)
		}
	}
	if j.State.Terminal() {
		s.freeze(r)
		if r.awaited {
			s.counted(r, now)
		}
	}
}

// notify signals the subscribers of queue, or, while a batch call holds
// the signals, notes the queue for release.
func (s *store) notify(queue string) {
	if !s.hold {
		s.signal(queue)
		return
	}
	if n := len(s.held); n == 0 || s.held[n-1] != queue {
		s.held = append(s.held, queue)
	}
}

// holdSignals makes notify collect signals until releaseSignals.
func (s *store) holdSignals() { s.hold = true }

// releaseSignals sends the signals collected since holdSignals, once per
// queue in a row.
func (s *store) releaseSignals() {
	s.hold = false
	for i, queue := range s.held {
		if i == 0 || s.held[i-1] != queue {
			s.signal(queue)
		}
	}
	clear(s.held)
	s.held = s.held[:0]
}

// fileScheduled puts a queued or sleeping job that is not yet due in its
// queue's scheduled heap.
func (s *store) fileScheduled(r *jobRec) {
	r.q.scheduled.add(r, r.job.RunAt)
	if s.scheduled != nil {
		s.scheduled(r.job.Queue, r.q, r.job.RunAt)
	}
}

// fileDeadline puts an active job in the deadline heap if a cancellation
// deadline applies to it in its current phase.
func (s *store) fileDeadline(r *jobRec) {
	if r.job.Cancel.IsZero() {
		return // no deadline in any phase
	}
	if d, ok := core.Deadline(r.job); ok {
		r.deadline = d
		s.deadlines.add(r, d)
	}
}

// deadlinePassed is core.DeadlinePassed without copying a job that has no
// deadline.
func deadlinePassed(j *core.Job, now time.Time) (string, bool) {
	if j.Cancel.IsZero() {
		return "", false
	}
	return core.DeadlinePassed(*j, now)
}

// openRun starts the run of a claim that r.job now holds.
func (s *store) openRun(r *jobRec, now time.Time) {
	j := &r.job
	if r.runs == nil {
		r.runs = r.runBuf[:0]
	}
	r.runs = append(r.runs, core.Run{
		ID:        core.RunID(j.ID, j.Lease.Token),
		JobID:     j.ID,
		Attempt:   j.Attempt,
		WorkerID:  j.Lease.WorkerID,
		Token:     j.Lease.Token,
		Status:    core.RunRunning,
		StartedAt: now,
	})
	r.t.runs.add(core.RunRunning, 1)
}

// endRun closes r's open run, if any, with status and error text.
func (s *store) endRun(r *jobRec, status core.RunStatus, errText string, now time.Time) {
	if len(r.runs) == 0 {
		return
	}
	run := &r.runs[len(r.runs)-1]
	if run.Status != core.RunRunning {
		return
	}
	run.Status = status
	run.FinishedAt = now
	run.Error = errText
	t := r.t
	t.runs.add(core.RunRunning, -1)
	t.runs.add(status, 1)
	t.runTime += run.Duration()
}

// finish moves an active job to a terminal state at now, closing its open
// run with runStatus. lastError, when not empty, replaces the job's
// LastError.
func (s *store) finish(r *jobRec, state core.JobState, runStatus core.RunStatus, lastError string, now time.Time) {
	old := r.job.State
	s.detach(r, now)
	s.endRun(r, runStatus, lastError, now)
	r.job.State = state
	r.job.FinishedAt = now
	if lastError != "" {
		r.job.LastError = lastError
	}
	s.attach(r, old, now)
}

// cancel cancels an active job at now with reason. A job on a current
// wait with CancelChildren cancels the awaited jobs that are not terminal
// in the same step.
func (s *store) cancel(r *jobRec, reason string, now time.Time) {
	var w *waitRec
	if r.waiting {
		if w = s.waits[r.id]; w != nil && !(w.w.CancelChildren && current(w, r)) {
			w = nil
		}
	}
	s.finish(r, core.StateCancelled, core.RunCancelled, reason, now)
	if w != nil {
		s.cancelChildren(w, reason, now)
	}
}

// insert stores a new job. prev, when not nil, is a record stored just
// before, whose queue and task indexes r reuses when it names the same.
func (s *store) insert(r, prev *jobRec, now time.Time) {
	j := &r.job
	r.id = j.ID
	s.seq++
	r.seq = s.seq
	if prev != nil && prev.job.Queue == j.Queue && prev.job.Task == j.Task {
		r.q, r.t, r.tally = prev.q, prev.t, prev.tally
	} else {
		r.q, r.t, r.tally = s.queue(j.Queue), s.task(j.Task), s.pair(j.Queue, j.Task)
	}
	q, t := r.q, r.t
	s.ids.insert(r)
	q.ids.insert(r)
	t.ids.insert(r)
	t.noteCreated(j.CreatedAt)
	if j.IdempotencyKey != "" {
		s.idem[idemKey{j.Queue, j.IdempotencyKey}] = r
	}
	if j.LimitKey != "" || j.SequenceKey != "" {
		s.flowInsert(r)
	}
	s.attach(r, "", now)
}

// delete removes a job with its runs and checkpoints, and releases its
// idempotency key.
func (s *store) delete(r *jobRec, now time.Time) {
	body := r.view()
	j := &body.job
	s.detach(r, now)
	r.deleted = true
	q, t, p := r.q, r.t, r.tally
	q.counts.add(j.State, -1)
	t.counts.add(j.State, -1)
	p.add(j.State, -1)
	if p.total() == 0 {
		delete(s.pairs, pairKey{j.Queue, j.Task})
	}
	for _, run := range body.runs {
		t.runs.add(run.Status, -1)
		t.runTime -= run.Duration()
	}
	t.forgetCreated(j.CreatedAt)
	k := idemKey{j.Queue, j.IdempotencyKey}
	if j.IdempotencyKey != "" && s.idem[k] == r {
		delete(s.idem, k)
	}
	s.ids.drop()
	q.ids.drop()
	t.ids.drop()
	if r.fl != nil {
		s.flowDelete(r, j.State, now)
	}
	if j.State == core.StateRunning && (len(t.gates) > 0 || r.fl != nil) {
		s.freed(r, now)
	}
	s.dropWait(r)
	if r.awaited {
		s.counted(r, now)
	}
}
