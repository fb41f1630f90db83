package natsq

import (
	"sort"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/google/btree"
)

// jobRec is a replica's record of one job with its runs and checkpoints.
type jobRec struct {
	job         core.Job
	runs        []core.Run
	checkpoints map[string]core.Checkpoint
	// where says where a queued or sleeping job is placed in its queue's
	// ready index (see flow_ready.go).
	where uint8
	// holdsSeq: the job failed terminally and holds its sequence (see
	// flow_seq.go).
	holdsSeq bool
	// waiters names the jobs whose wait awaits this one and has not yet
	// counted it (see await.go); nil for a job nobody awaits.
	waiters []string
}

// readyKey orders the queued and sleeping jobs of one queue for claims.
type readyKey struct {
	prio  int
	runAt int64 // unix microseconds
	id    string
}

func readyLess(a, b readyKey) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.runAt != b.runAt {
		return a.runAt < b.runAt
	}
	return a.id < b.id
}

// finKey orders terminal jobs by finish time for retention.
type finKey struct {
	at int64 // unix microseconds
	id string
}

func finLess(a, b finKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.id < b.id
}

type countKey struct {
	queue, task string
	state       core.JobState
}

type idemKey struct{ queue, key string }

// runStats aggregates the runs of one task.
type runStats struct {
	runs    map[core.RunStatus]int64
	runTime time.Duration
}

// state is one replica of the store: a deterministic function of the
// command log up to applied. Every field is guarded by Backend.mu.
type state struct {
	applied uint64
	// lastTS is the newest server timestamp among the applied commands.
	// Commands that carry no time of their own are decided at their
	// message's timestamp, but never before lastTS, so the time the
	// replicas decide by never goes backwards, even when a new stream
	// leader's clock is behind the old one's.
	lastTS time.Time

	jobs map[string]*jobRec
	ids  *btree.BTreeG[string]
	// qids holds the ids of each queue's jobs, for listings and deletions
	// of one queue.
	qids      map[string]*btree.BTreeG[string]
	ready     map[string]*queueReady
	running   map[string]*jobRec
	deadlined map[string]map[string]*jobRec // queue -> active jobs with a deadline in their phase
	finished  *btree.BTreeG[finKey]
	counts    map[countKey]int64
	taskRuns  map[string]*runStats
	active    map[string]int64       // task -> active jobs
	created   map[string][]time.Time // task -> sorted CreatedAt of its jobs
	// idem maps each idempotency key to the job that holds it, or to
	// the last job that held it (see flow_unique.go).
	idem map[idemKey]*jobRec

	// now is the time of the command being applied.
	now time.Time
	// flow holds the running counters, start counters and gates of flow
	// control; seqs the sequences.
	flow flowState
	seqs map[seqKey]*sequence

	taskCfg  map[string]core.TaskConfig
	queueCfg map[string]core.QueueConfig
	// declared holds the queues declared by opCreateQueue; each also has
	// a config in queueCfg.
	declared map[string]bool
	// waits holds the latest wait of each job that began one (see
	// await.go).
	waits map[string]*waitRec

	// parts holds the leading parts of commands too large for one message.
	parts map[uint64][]byte

	// touched collects the queues whose jobs changed during one command,
	// for wake-ups.
	touched map[string]struct{}
}

func newState() *state {
	return &state{
		jobs:      map[string]*jobRec{},
		ids:       btree.NewOrderedG[string](32),
		qids:      map[string]*btree.BTreeG[string]{},
		ready:     map[string]*queueReady{},
		running:   map[string]*jobRec{},
		deadlined: map[string]map[string]*jobRec{},
		finished:  btree.NewG(32, finLess),
		counts:    map[countKey]int64{},
		taskRuns:  map[string]*runStats{},
		active:    map[string]int64{},
		created:   map[string][]time.Time{},
		idem:      map[idemKey]*jobRec{},
		flow:      newFlowState(),
		seqs:      map[seqKey]*sequence{},
		taskCfg:   map[string]core.TaskConfig{},
		queueCfg:  map[string]core.QueueConfig{},
		declared:  map[string]bool{},
		waits:     map[string]*waitRec{},
		parts:     map[uint64][]byte{},
		touched:   map[string]struct{}{},
	}
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func (s *state) stats(task string) *runStats {
	r := s.taskRuns[task]
	if r == nil {
		r = &runStats{runs: map[core.RunStatus]int64{}}
		s.taskRuns[task] = r
	}
	return r
}

// Every change of a job follows one pattern that keeps the indexes right:
// unindex(r), change r, index(r). index and unindex touch exactly the same
// entries for the same record, so they must bracket every change.

func (s *state) index(r *jobRec) {
	j := &r.job
	s.touched[j.Queue] = struct{}{}
	s.counts[countKey{j.Queue, j.Task, j.State}]++
	if j.State.Active() {
		s.active[j.Task]++
		if _, ok := core.Deadline(*j); ok {
			m := s.deadlined[j.Queue]
			if m == nil {
				m = map[string]*jobRec{}
				s.deadlined[j.Queue] = m
			}
			m[j.ID] = r
		}
	}
	switch {
	case j.State == core.StateQueued || j.State == core.StateSleeping:
		if j.SequenceKey == "" {
			s.place(r)
		}
	case j.State == core.StateRunning:
		s.running[j.ID] = r
		s.runningChanged(j, 1)
	case j.State.Terminal():
		s.finished.ReplaceOrInsert(finKey{micros(j.FinishedAt), j.ID})
	}
	if j.SequenceKey != "" {
		s.seqIndex(r)
	}
	st := s.stats(j.Task)
	for _, run := range r.runs {
		st.runs[run.Status]++
		st.runTime += run.Duration()
	}
	// A job that just ended counts in the waits on it, once its own
	// entries are in place. Only a job that is not terminal has edges.
	if r.waiters != nil && j.State.Terminal() {
		s.countAwaited(r)
	}
}

func (s *state) unindex(r *jobRec) {
	j := &r.job
	s.touched[j.Queue] = struct{}{}
	k := countKey{j.Queue, j.Task, j.State}
	if s.counts[k]--; s.counts[k] <= 0 {
		delete(s.counts, k)
	}
	if j.State.Active() {
		if s.active[j.Task]--; s.active[j.Task] <= 0 {
			delete(s.active, j.Task)
		}
		if m := s.deadlined[j.Queue]; m != nil {
			delete(m, j.ID)
			if len(m) == 0 {
				delete(s.deadlined, j.Queue)
			}
		}
	}
	switch {
	case j.State == core.StateQueued || j.State == core.StateSleeping:
		if r.where != unplaced {
			s.unplace(r)
		}
	case j.State == core.StateRunning:
		delete(s.running, j.ID)
		s.runningChanged(j, -1)
	case j.State.Terminal():
		s.finished.Delete(finKey{micros(j.FinishedAt), j.ID})
	}
	if j.SequenceKey != "" {
		s.seqUnindex(r)
	}
	st := s.stats(j.Task)
	for _, run := range r.runs {
		if st.runs[run.Status]--; st.runs[run.Status] <= 0 {
			delete(st.runs, run.Status)
		}
		st.runTime -= run.Duration()
	}
}

// insert adds a new job.
func (s *state) insert(j core.Job) *jobRec {
	r := &jobRec{job: j}
	s.insertRec(r)
	return r
}

// insertRec adds a record with its runs and checkpoints.
func (s *state) insertRec(r *jobRec) {
	j := &r.job
	s.jobs[j.ID] = r
	s.ids.ReplaceOrInsert(j.ID)
	q := s.qids[j.Queue]
	if q == nil {
		q = btree.NewOrderedG[string](32)
		s.qids[j.Queue] = q
	}
	q.ReplaceOrInsert(j.ID)
	if j.IdempotencyKey != "" {
		s.idem[idemKey{j.Queue, j.IdempotencyKey}] = r
	}
	c := s.created[j.Task]
	i := sort.Search(len(c), func(i int) bool { return c[i].After(j.CreatedAt) })
	c = append(c, time.Time{})
	copy(c[i+1:], c[i:])
	c[i] = j.CreatedAt
	s.created[j.Task] = c
	s.index(r)
}

// remove deletes a job with its runs and checkpoints and frees its key.
// The deletion counts in the waits that await the job, and the job's own
// wait goes with it.
func (s *state) remove(r *jobRec) {
	j := &r.job
	if r.waiters != nil {
		s.countAwaited(r)
	}
	s.dropWait(j.ID)
	s.unindex(r)
	if j.SequenceKey != "" {
		s.seqRelease(j)
	}
	delete(s.jobs, j.ID)
	s.ids.Delete(j.ID)
	if q := s.qids[j.Queue]; q != nil {
		q.Delete(j.ID)
		if q.Len() == 0 {
			delete(s.qids, j.Queue)
		}
	}
	if j.IdempotencyKey != "" {
		k := idemKey{j.Queue, j.IdempotencyKey}
		if s.idem[k] == r {
			delete(s.idem, k)
		}
	}
	c := s.created[j.Task]
	i := sort.Search(len(c), func(i int) bool { return !c[i].Before(j.CreatedAt) })
	if i < len(c) {
		c = append(c[:i], c[i+1:]...)
	}
	if len(c) == 0 {
		delete(s.created, j.Task)
	} else {
		s.created[j.Task] = c
	}
}

// idIndex returns the ids of queue's jobs, or of every job when queue is
// empty; nil when the queue has no job.
func (s *state) idIndex(queue string) *btree.BTreeG[string] {
	if queue == "" {
		return s.ids
	}
	return s.qids[queue]
}

// walkIDs calls visit for the ids of t in order, or descending when desc,
// from from on (inclusive; every id when from is empty), until visit
// returns false. A nil t has no ids.
func walkIDs(t *btree.BTreeG[string], from string, desc bool, visit func(string) bool) {
	switch {
	case t == nil:
	case desc && from != "":
		t.DescendLessOrEqual(from, visit)
	case desc:
		t.Descend(visit)
	case from != "":
		t.AscendGreaterOrEqual(from, visit)
	default:
		t.Ascend(visit)
	}
}

// createdWithin counts the jobs of task created in (now-1s, now].
func (s *state) createdWithin(task string, now time.Time) int {
	c := s.created[task]
	lo := sort.Search(len(c), func(i int) bool { return c[i].After(now.Add(-time.Second)) })
	hi := sort.Search(len(c), func(i int) bool { return c[i].After(now) })
	if hi < lo {
		return 0
	}
	return hi - lo
}

// currentRun returns the open run of a running job, or nil.
func (r *jobRec) currentRun() *core.Run {
	for i := len(r.runs) - 1; i >= 0; i-- {
		if r.runs[i].Token == r.job.Lease.Token {
			if r.runs[i].Status == core.RunRunning {
				return &r.runs[i]
			}
			return nil
		}
	}
	return nil
}

// closeRun ends the open run of r, if any.
func (r *jobRec) closeRun(status core.RunStatus, now time.Time, errText string) {
	if run := r.currentRun(); run != nil {
		run.Status = status
		run.FinishedAt = now
		run.Error = errText
	}
}
