package mem

import (
	"bytes"
	"maps"

	"github.com/boson-go/boson/core"
)

// copyJob returns j with its own copies of every slice and map, so that
// neither the caller nor the backend can change the other's memory.
func copyJob(j core.Job) core.Job {
	j.Payload = bytes.Clone(j.Payload)
	j.Headers = maps.Clone(j.Headers)
	j.Result = bytes.Clone(j.Result)
	return j
}

// copyOut gives *j, a copy of a stored job, its own copies of every slice
// and map, like copyJob, taking the payload from arena.
func copyOut(j *core.Job, arena *[]byte) {
	j.Payload = carve(arena, j.Payload)
	if j.Headers != nil {
		j.Headers = maps.Clone(j.Headers)
	}
	if j.Result != nil {
		j.Result = bytes.Clone(j.Result)
	}
}

// carve returns a copy of p in the free capacity of *arena (allocating
// when that is too small), capped so that appending to it cannot reach
// the next copy. Like bytes.Clone it keeps nil as nil.
func carve(arena *[]byte, p []byte) []byte {
	if len(p) == 0 {
		return p[:0:0] // nil stays nil, empty stays empty
	}
	a := *arena
	if cap(a)-len(a) < len(p) {
		return append([]byte{}, p...)
	}
	n := len(a)
	a = append(a, p...)
	*arena = a
	return a[n:len(a):len(a)]
}

// copyCheckpoint returns c with its own copy of the value.
func copyCheckpoint(c core.Checkpoint) core.Checkpoint {
	c.Value = bytes.Clone(c.Value)
	return c
}
