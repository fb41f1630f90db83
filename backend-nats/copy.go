package natsq

import (
	"maps"

	"github.com/boson-go/boson/core"
)

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// copyJob returns j with its own payload, headers and result, so that
// callers never alias a replica's memory.
func copyJob(j core.Job) core.Job {
	j.Payload = cloneBytes(j.Payload)
	j.Result = cloneBytes(j.Result)
	if j.Headers != nil {
		j.Headers = maps.Clone(j.Headers)
	}
	return j
}
