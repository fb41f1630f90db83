package bench

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// tracker records, per job id, when the job was spawned, started and
// finished and how often a handler ran it.
type tracker struct {
	seed   maphash.Seed
	shards [64]trackShard
	done   atomic.Int64
	execs  atomic.Int64
	// doneCh, when not nil, receives each finished id (non-blocking).
	doneCh chan string
	target int64
	full   chan struct{}
	once   sync.Once
}

type trackShard struct {
	mu sync.Mutex
	m  map[string]*jobRec
}

type jobRec struct {
	spawn, start, done int64 // unix ns; 0 = not yet
	execs, dones       int32
}

func newTracker(expect int, target int64) *tracker {
	t := &tracker{seed: maphash.MakeSeed(), target: target, full: make(chan struct{})}
	per := expect/len(t.shards) + 1
	for i := range t.shards {
		t.shards[i].m = make(map[string]*jobRec, per)
	}
	return t
}

func (t *tracker) shard(id string) *trackShard {
	return &t.shards[maphash.String(t.seed, id)%uint64(len(t.shards))]
}

// spawned registers ids spawned at the given time. A handler may already
// have run one of them; its record is kept.
func (t *tracker) spawned(ids []string, at time.Time) {
	ns := at.UnixNano()
	for _, id := range ids {
		s := t.shard(id)
		s.mu.Lock()
		r := s.m[id]
		if r == nil {
			r = &jobRec{}
			s.m[id] = r
		}
		r.spawn = ns
		s.mu.Unlock()
	}
}

// started records one handler execution of id.
func (t *tracker) started(id string, at time.Time) {
	t.execs.Add(1)
	s := t.shard(id)
	s.mu.Lock()
	r := s.m[id]
	if r == nil {
		r = &jobRec{}
		s.m[id] = r
	}
	r.execs++
	if r.start == 0 {
		r.start = at.UnixNano()
	}
	s.mu.Unlock()
}

// finished records a successful completion of id.
func (t *tracker) finished(id string, at time.Time) {
	s := t.shard(id)
	s.mu.Lock()
	r := s.m[id]
	if r == nil {
		r = &jobRec{}
		s.m[id] = r
	}
	r.dones++
	if r.done == 0 {
		r.done = at.UnixNano()
	}
	s.mu.Unlock()
	if n := t.done.Add(1); t.target > 0 && n >= t.target {
		t.once.Do(func() { close(t.full) })
	}
	if t.doneCh != nil {
		select {
		case t.doneCh <- id:
		default:
		}
	}
}

// get returns a copy of id's record.
func (t *tracker) get(id string) (jobRec, bool) {
	s := t.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.m[id]
	if r == nil {
		return jobRec{}, false
	}
	return *r, true
}

// verify checks that every registered job ran and finished exactly once and
// that nothing unregistered ran. It returns the problems found (at most a
// few examples of each).
func (t *tracker) verify(want int) []string {
	var problems []string
	var jobs, notRun, twice, notDone, doneTwice, unspawned int
	example := map[string]string{}
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for id, r := range s.m {
			jobs++
			switch {
			case r.spawn == 0:
				unspawned++
				example["unspawned"] = id
			case r.execs == 0:
				notRun++
				example["not run"] = id
			case r.execs > 1:
				twice++
				example["run more than once"] = id
			}
			switch {
			case r.dones == 0:
				notDone++
				example["not completed"] = id
			case r.dones > 1:
				doneTwice++
				example["completed more than once"] = id
			}
		}
		s.mu.Unlock()
	}
	add := func(n int, what string) {
		if n > 0 {
			problems = append(problems, plural(n, "job")+" "+what+" (e.g. "+example[what]+")")
		}
	}
	if jobs-unspawned != want {
		problems = append(problems, "spawned "+itoa(jobs-unspawned)+" jobs, want "+itoa(want))
	}
	add(unspawned, "unspawned")
	add(notRun, "not run")
	add(twice, "run more than once")
	add(notDone, "not completed")
	add(doneTwice, "completed more than once")
	return problems
}

// latencies returns spawn-to-start and spawn-to-done durations of every
// finished job.
func (t *tracker) latencies() (start, done []time.Duration) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for _, r := range s.m {
			if r.spawn == 0 {
				continue
			}
			if r.start != 0 {
				start = append(start, time.Duration(r.start-r.spawn))
			}
			if r.done != 0 {
				done = append(done, time.Duration(r.done-r.spawn))
			}
		}
		s.mu.Unlock()
	}
	return start, done
}

// verifyFinished checks, for a partial drain, that no job ran or completed
// more than once and that every finished job ran.
func (t *tracker) verifyFinished() []string {
	var twice, doneTwice, notRun int
	example := map[string]string{}
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for id, r := range s.m {
			switch {
			case r.execs > 1:
				twice++
				example["run more than once"] = id
			case r.execs == 0 && r.dones > 0:
				notRun++
				example["completed without running"] = id
			}
			if r.dones > 1 {
				doneTwice++
				example["completed more than once"] = id
			}
		}
		s.mu.Unlock()
	}
	var problems []string
	add := func(n int, what string) {
		if n > 0 {
			problems = append(problems, plural(n, "job")+" "+what+" (e.g. "+example[what]+")")
		}
	}
	add(twice, "run more than once")
	add(doneTwice, "completed more than once")
	add(notRun, "completed without running")
	return problems
}

// completedTwice returns how many jobs finished more than once, and one of
// them.
func (t *tracker) completedTwice() (n int, example string) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for id, r := range s.m {
			if r.dones > 1 {
				n++
				example = id
			}
		}
		s.mu.Unlock()
	}
	return n, example
}
