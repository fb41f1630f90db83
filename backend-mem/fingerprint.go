package mem

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"

	"github.com/boson-go/boson/core"
)

// fingerprint returns [core.Fingerprint] of r, computed without the
// allocations of the generic hash interface: the hashed bytes are laid out
// in one buffer (on the stack for a small request) and hashed at once.
// TestFingerprintMatchesCore holds it to core's definition.
func fingerprint(r *core.EnqueueRequest) string {
	var stack [512]byte
	b := stack[:0]
	putInt := func(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }
	putStr := func(b []byte, s string) []byte { return append(putInt(b, int64(len(s))), s...) }

	b = putStr(b, r.Task)
	b = putInt(b, int64(len(r.Payload)))
	b = append(b, r.Payload...)
	b = putInt(b, int64(len(r.Headers)))
	if len(r.Headers) > 0 {
		keys := make([]string, 0, len(r.Headers))
		for k := range r.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = putStr(b, k)
			b = putStr(b, r.Headers[k])
		}
	}
	b = putInt(b, int64(attempts(r.MaxAttempts)))
	b = putInt(b, int64(r.Retry.Initial))
	b = putInt(b, int64(math.Float64bits(r.Retry.Factor)))
	b = putInt(b, int64(r.Retry.Max))
	b = putInt(b, int64(math.Float64bits(r.Retry.Jitter)))
	b = putInt(b, int64(r.Cancel.MaxDelay))
	b = putInt(b, int64(r.Cancel.MaxDuration))

	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

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
