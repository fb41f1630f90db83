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

// copyCheckpoint returns c with its own copy of the value.
func copyCheckpoint(c core.Checkpoint) core.Checkpoint {
	c.Value = bytes.Clone(c.Value)
	return c
}
