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

// The creation window of a task, for MaxEnqueuePerSecond: a sorted list of
// the creation times of its recent jobs. Times a second older than the
// newest creation are pruned whenever the task enqueues, so the list holds
// about one second of the task's enqueues. (A clock moved back by more than
// a second can therefore undercount; production clocks do not do that.)

// noteCreated records a job created at at.
func (t *taskState) noteCreated(at time.Time) {
	t.prune(at)
	n := len(t.created)
	if n == 0 || !at.Before(t.created[n-1]) {
		t.created = append(t.created, at)
		return
	}
	i := sort.Search(n, func(i int) bool { return t.created[i].After(at) })
	t.created = append(t.created, time.Time{})
	copy(t.created[i+1:], t.created[i:])
	t.created[i] = at
}

// forgetCreated removes one recorded creation at t, if it is still kept.
func (t *taskState) forgetCreated(at time.Time) {
	i := sort.Search(len(t.created), func(i int) bool { return !t.created[i].Before(at) })
	if i < len(t.created) && t.created[i].Equal(at) {
		t.created = append(t.created[:i], t.created[i+1:]...)
	}
}

// createdWithin counts the jobs created in (now-1s, now], after pruning the
// times that can no longer count.
func (t *taskState) createdWithin(now time.Time) int {
	t.prune(now)
	upto := sort.Search(len(t.created), func(i int) bool { return t.created[i].After(now) })
	return upto
}

// prune forgets the creation times that cannot count at now or later:
// those at or before now-1s. Reslicing makes it O(log n); append reclaims
// the dropped prefix when it next grows the array.
func (t *taskState) prune(now time.Time) {
	from := now.Add(-time.Second)
	drop := sort.Search(len(t.created), func(i int) bool { return t.created[i].After(from) })
	t.created = t.created[drop:]
}
