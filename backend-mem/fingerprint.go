package mem

import (
	"bytes"

	"github.com/boson-go/boson/core"
)

// sameFingerprint reports whether a and b hash to the same fingerprint
// because they agree on everything it covers, which is cheaper to check
// than to hash: a batch often repeats one request.
func sameFingerprint(a, b *core.EnqueueRequest) bool {
	return a.Task == b.Task && len(a.Headers) == 0 && len(b.Headers) == 0 &&
		attempts(a.MaxAttempts) == attempts(b.MaxAttempts) && a.Retry == b.Retry && a.Cancel == b.Cancel &&
		bytes.Equal(a.Payload, b.Payload) && b.Fingerprint == ""
}

// attempts is the attempt budget a request's MaxAttempts stands for.
func attempts(n int) int {
	if n == 0 {
		return core.DefaultMaxAttempts
	}
	return n
}
