package mem

import (
	"sort"
	"time"

	"github.com/boson-go/boson/core"
)

// stateCounts counts jobs by state, indexed like core.AllStates.
type stateCounts [6]int64

func stateIndex(s core.JobState) int {
	switch s {
	case core.StateQueued:
		return 0
	case core.StateRunning:
		return 1
	case core.StateSleeping:
		return 2
	case core.StateSucceeded:
		return 3
	case core.StateFailed:
		return 4
	default:
		return 5
	}
}

func (c *stateCounts) add(s core.JobState, d int64) { c[stateIndex(s)] += d }

func (c *stateCounts) get(s core.JobState) int64 { return c[stateIndex(s)] }

func (c *stateCounts) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// active is the number of queued, running and sleeping jobs.
func (c *stateCounts) active() int64 {
	return c.get(core.StateQueued) + c.get(core.StateRunning) + c.get(core.StateSleeping)
}

// addTo adds the non-zero counts to m, restricted to states when not empty.
func (c *stateCounts) addTo(m map[core.JobState]int64, states []core.JobState) {
	for i, s := range core.AllStates {
		if c[i] == 0 || len(states) > 0 && !hasState(states, s) {
			continue
		}
		m[s] += c[i]
	}
}

func hasState(states []core.JobState, s core.JobState) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}

// runCounts counts runs by status, indexed like core.AllRunStatuses.
type runCounts [6]int64

func runIndex(s core.RunStatus) int {
	switch s {
	case core.RunRunning:
		return 0
	case core.RunSucceeded:
		return 1
	case core.RunFailed:
		return 2
	case core.RunSleeping:
		return 3
	case core.RunCancelled:
		return 4
	default:
		return 5
	}
}

func (c *runCounts) add(s core.RunStatus, d int64) { c[runIndex(s)] += d }

// The creation window of a task, for MaxEnqueuePerSecond: a sorted list of
// the creation times of its recent jobs, each with the number of jobs
// created at that instant (a batch shares one). Times a second older than
// the newest creation are pruned whenever the task enqueues, so the list
// holds about one second of the task's enqueues. (A clock moved back by
// more than a second can therefore undercount; production clocks do not do
// that.)

// createdAt is one instant of a task's creation window.
type createdAt struct {
	at time.Time
	n  int
}

// noteCreated records a job created at at.
func (t *taskState) noteCreated(at time.Time) {
	t.nCreated++
	n := len(t.created)
	if n > 0 && t.created[n-1].at.Equal(at) {
		t.created[n-1].n++
		return
	}
	t.prune(at)
	n = len(t.created)
	if n == 0 || t.created[n-1].at.Before(at) {
		t.created = append(t.created, createdAt{at, 1})
		return
	}
	i := sort.Search(n, func(i int) bool { return !t.created[i].at.Before(at) })
	if t.created[i].at.Equal(at) {
		t.created[i].n++
		return
	}
	t.created = append(t.created, createdAt{})
	copy(t.created[i+1:], t.created[i:])
	t.created[i] = createdAt{at, 1}
}

// forgetCreated removes one recorded creation at t, if it is still kept.
func (t *taskState) forgetCreated(at time.Time) {
	i := sort.Search(len(t.created), func(i int) bool { return !t.created[i].at.Before(at) })
	if i < len(t.created) && t.created[i].at.Equal(at) {
		t.nCreated--
		if t.created[i].n--; t.created[i].n == 0 {
			t.created = append(t.created[:i], t.created[i+1:]...)
		}
	}
}

// createdWithin counts the jobs created in (now-1s, now], after pruning the
// times that can no longer count.
func (t *taskState) createdWithin(now time.Time) int {
	t.prune(now)
	n := t.nCreated
	for i := len(t.created) - 1; i >= 0 && t.created[i].at.After(now); i-- {
		n -= t.created[i].n // only after the clock moved back
	}
	return n
}

// prune forgets the creation times that cannot count at now or later:
// those at or before now-1s. Each time is dropped once, so this costs O(1)
// amortised; reslicing leaves append to reclaim the dropped prefix when it
// next grows the array.
func (t *taskState) prune(now time.Time) {
	from := now.Add(-time.Second)
	drop := 0
	for drop < len(t.created) && !t.created[drop].at.After(from) {
		t.nCreated -= t.created[drop].n
		drop++
	}
	t.created = t.created[drop:]
}
