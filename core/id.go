package core

import (
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"sync"
	"time"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// IDLength is the length of the ids [NewID] returns.
const IDLength = 26

var idState struct {
	sync.Mutex
	ms     uint64
	hi     uint16
	lo     uint64
	seeded bool
}

// NewID returns a new job or run id: 26 characters of Crockford base32
// (a ULID) whose first 10 encode t in milliseconds. Ids compare in the
// order they were made within one process, also when t stands still or
// goes backwards, and are unique across processes with overwhelming
// probability (80 random bits per millisecond).
func NewID(t time.Time) string {
	ms := uint64(max(t.UnixMilli(), 0)) & (1<<48 - 1)
	idState.Lock()
	if ms <= idState.ms && idState.seeded {
		ms = idState.ms
		idState.lo++
		if idState.lo == 0 {
			idState.hi++
		}
	} else {
		var b [10]byte
		_, _ = rand.Read(b[:])
		idState.hi = binary.BigEndian.Uint16(b[:2]) & 0x7fff // leave room to count up
		idState.lo = binary.BigEndian.Uint64(b[2:])
		idState.ms = ms
		idState.seeded = true
	}
	hi, lo := idState.hi, idState.lo
	idState.Unlock()

	// 128 bits: 48 time, 16 hi, 64 lo; encode as 26 base32 digits (130 bits, top 2 zero).
	var out [IDLength]byte
	// Work on a 128-bit value split in two uint64: a = time<<16 | hi, b = lo.
	a := ms<<16 | uint64(hi)
	b := lo
	for i := IDLength - 1; i >= 0; i-- {
		out[i] = crockford[b&31]
		b = b>>5 | (a&31)<<59
		a >>= 5
	}
	return string(out[:])
}

// IDTime returns the millisecond timestamp encoded in an id from [NewID],
// or false when id is not such an id.
func IDTime(id string) (time.Time, bool) {
	if len(id) != IDLength {
		return time.Time{}, false
	}
	var ms uint64
	for i := 0; i < 10; i++ {
		v := decodeCrockford(id[i])
		if v < 0 {
			return time.Time{}, false
		}
		ms = ms<<5 | uint64(v)
	}
	return time.UnixMilli(int64(ms)).UTC(), true
}

func decodeCrockford(c byte) int {
	for i := 0; i < len(crockford); i++ {
		if crockford[i] == c {
			return i
		}
	}
	return -1
}

// RunID returns "<job id>.<token>": an id for the run that a claim with
// fencing token token opens on job jobID. A job's token grows by one per
// claim, so no two runs ever share such an id; a backend can derive it from
// the job's state instead of storing or generating one.
func RunID(jobID string, token int64) string {
	return jobID + "." + strconv.FormatInt(token, 10)
}
