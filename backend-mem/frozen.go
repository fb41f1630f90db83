package mem

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
	"time"

	"github.com/boson-go/boson/core"
)

// Finished jobs are kept frozen: a terminal job changes only when Retry
// queues it again, so once it finishes its body (the job, its runs and its
// checkpoints) is encoded into bytes that hold no pointers and the body
// itself is dropped. A process that keeps many finished jobs until
// retention then holds them in memory the garbage collector need not scan:
// per job a small record with a few pointers and the frozen bytes, instead
// of the several hundred bytes of strings, slices and times of a body.
// Reads decode a copy; Retry thaws the record for good.

// freeze encodes r's body into frozen bytes kept in s's arena and drops
// the body.
func (s *store) freeze(r *jobRec) {
	if bound := sizeBound(r.jobBody); cap(s.arena)-len(s.arena) < bound {
		// A new chunk: chunks fill in finish order, which is about the order
		// in which Cleanup deletes, so old chunks are released whole.
		s.arena = make([]byte, 0, max(arenaChunk, bound))
	}
	n := len(s.arena)
	s.arena = encodeBody(s.arena, r.jobBody) // fits: no reallocation
	r.frozen = s.arena[n:len(s.arena):len(s.arena)]
	r.final = int8(stateIndex(r.job.State))
	r.jobBody = nil
}

// sizeBound is at least the size of body's encoding.
func sizeBound(b *jobBody) int {
	j := &b.job
	n := 52*binary.MaxVarintLen64 + len(j.ID) + len(j.Queue) + len(j.Task) + len(j.Payload) +
		len(j.State) + len(j.IdempotencyKey) + len(j.Fingerprint) + len(j.Actor) + len(j.Result) +
		len(j.LastError) + len(j.Lease.JobID) + len(j.Lease.WorkerID) +
		len(j.Unique) + len(j.LimitKey) + len(j.SequenceKey)
	for k, v := range j.Headers {
		n += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	for i := range b.runs {
		r := &b.runs[i]
		n += 12*binary.MaxVarintLen64 + len(r.ID) + len(r.JobID) + len(r.WorkerID) + len(r.Status) + len(r.Error)
	}
	for _, c := range b.checkpoints {
		n += 6*binary.MaxVarintLen64 + len(c.JobID) + len(c.Step) + len(c.Value)
	}
	return n
}

// arenaChunk is the size of the allocations that hold frozen jobs.
const arenaChunk = 64 << 10

// view returns r's body: its own when r is not frozen, else a decoded copy
// that changes nothing in r.
func (r *jobRec) view() *jobBody {
	if r.jobBody != nil {
		return r.jobBody
	}
	return decodeBody(r.frozen)
}

// copyOut returns a copy of r's job that shares no memory with r.
func (r *jobRec) copyOut() core.Job {
	if r.jobBody == nil {
		return decodeBody(r.frozen).job
	}
	return copyJob(r.job)
}

// The encoding: each field in a fixed order; integers as varints, strings
// and byte slices with their length (+1, with 0 for nil), times as seconds
// and nanoseconds (0, 0 for the zero time, which is the only time whose
// seconds are that far back).

type enc struct{ b []byte }

func (e *enc) int(v int64)  { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string) { e.b = append(binary.AppendUvarint(e.b, uint64(len(s))), s...) }

// ref writes s, which usually equals id, as a reference to id when it
// does.
func (e *enc) ref(s, id string) {
	if s == id && s != "" {
		e.b = append(e.b, 0)
		return
	}
	e.b = append(binary.AppendUvarint(e.b, uint64(len(s))+1), s...)
}

// fingerprint writes a fingerprint made by core.Fingerprint (64 lowercase
// hex digits) as its 32 bytes, and any other as a string.
func (e *enc) fingerprint(s string) {
	if len(s) == 2*sha256.Size && lowerHex(s) {
		var raw [sha256.Size]byte
		if _, err := hex.Decode(raw[:], []byte(s)); err == nil {
			e.b = append(append(e.b, 0), raw[:]...)
			return
		}
	}
	e.b = append(binary.AppendUvarint(e.b, uint64(len(s))+1), s...)
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (e *enc) f64(v float64) { e.b = binary.AppendUvarint(e.b, math.Float64bits(v)) }

func (e *enc) bytes(p []byte) {
	if p == nil {
		e.b = append(e.b, 0)
		return
	}
	e.b = append(binary.AppendUvarint(e.b, uint64(len(p))+1), p...)
}

func (e *enc) time(t time.Time) {
	if t.IsZero() {
		e.int(math.MinInt64)
		return
	}
	e.int(t.Unix())
	e.int(int64(t.Nanosecond()))
}

func encodeBody(b []byte, body *jobBody) []byte {
	e := enc{b}
	j := &body.job
	e.str(j.ID)
	e.str(j.Queue)
	e.str(j.Task)
	e.bytes(j.Payload)
	if j.Headers == nil {
		e.int(-1)
	} else {
		e.int(int64(len(j.Headers)))
		for k, v := range j.Headers {
			e.str(k)
			e.str(v)
		}
	}
	e.int(int64(j.Priority))
	e.str(string(j.State))
	e.int(int64(j.Attempt))
	e.int(int64(j.MaxAttempts))
	e.int(int64(j.Retry.Initial))
	e.f64(j.Retry.Factor)
	e.int(int64(j.Retry.Max))
	e.f64(j.Retry.Jitter)
	e.int(int64(j.Cancel.MaxDelay))
	e.int(int64(j.Cancel.MaxDuration))
	e.str(j.IdempotencyKey)
	e.fingerprint(j.Fingerprint)
	e.str(j.Actor)
	e.time(j.RunAt)
	e.time(j.CreatedAt)
	e.time(j.FirstStartedAt)
	e.time(j.FinishedAt)
	e.bytes(j.Result)
	e.str(j.LastError)
	e.ref(j.Lease.JobID, j.ID)
	e.str(j.Lease.WorkerID)
	e.int(j.Lease.Token)
	e.time(j.Lease.ExpiresAt)
	e.str(string(j.Unique))
	e.int(int64(j.UniquePeriod))
	e.str(j.LimitKey)
	e.str(j.SequenceKey)

	e.int(int64(len(body.runs)))
	for i := range body.runs {
		r := &body.runs[i]
		e.str(r.ID)
		e.ref(r.JobID, j.ID)
		e.int(int64(r.Attempt))
		e.str(r.WorkerID)
		e.int(r.Token)
		e.str(string(r.Status))
		e.time(r.StartedAt)
		e.time(r.FinishedAt)
		e.str(r.Error)
	}
	if body.checkpoints == nil {
		e.int(-1)
	} else {
		e.int(int64(len(body.checkpoints)))
		for _, c := range body.checkpoints {
			e.ref(c.JobID, j.ID)
			e.str(c.Step)
			e.bytes(c.Value)
			e.time(c.CreatedAt)
		}
	}
	return e.b
}

type dec struct{ b []byte }

func (d *dec) int() int64 {
	v, n := binary.Varint(d.b)
	d.b = d.b[n:]
	return v
}

func (d *dec) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string {
	n := d.uint()
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *dec) ref(id string) string {
	n := d.uint()
	if n == 0 {
		return id
	}
	s := string(d.b[:n-1])
	d.b = d.b[n-1:]
	return s
}

func (d *dec) fingerprint() string {
	n := d.uint()
	if n == 0 {
		s := hex.EncodeToString(d.b[:sha256.Size])
		d.b = d.b[sha256.Size:]
		return s
	}
	s := string(d.b[:n-1])
	d.b = d.b[n-1:]
	return s
}

func (d *dec) f64() float64 { return math.Float64frombits(d.uint()) }

func (d *dec) bytes() []byte {
	n := d.uint()
	if n == 0 {
		return nil
	}
	p := slices.Clone(d.b[: n-1 : n-1])
	if p == nil {
		p = []byte{}
	}
	d.b = d.b[n-1:]
	return p
}

func (d *dec) time() time.Time {
	sec := d.int()
	if sec == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(sec, d.int()).UTC()
}

// Frequent strings decode to shared constants rather than new copies.

func (d *dec) state() core.JobState {
	s := core.JobState(d.str())
	for _, c := range core.AllStates {
		if s == c {
			return c
		}
	}
	return s
}

func (d *dec) status() core.RunStatus {
	s := core.RunStatus(d.str())
	for _, c := range core.AllRunStatuses {
		if s == c {
			return c
		}
	}
	return s
}

func decodeBody(b []byte) *jobBody {
	d := dec{b}
	body := &jobBody{}
	j := &body.job
	j.ID = d.str()
	j.Queue = d.str()
	j.Task = d.str()
	j.Payload = d.bytes()
	if n := d.int(); n >= 0 {
		j.Headers = make(map[string]string, n)
		for range n {
			k := d.str()
			j.Headers[k] = d.str()
		}
	}
	j.Priority = int(d.int())
	j.State = d.state()
	j.Attempt = int(d.int())
	j.MaxAttempts = int(d.int())
	j.Retry.Initial = time.Duration(d.int())
	j.Retry.Factor = d.f64()
	j.Retry.Max = time.Duration(d.int())
	j.Retry.Jitter = d.f64()
	j.Cancel.MaxDelay = time.Duration(d.int())
	j.Cancel.MaxDuration = time.Duration(d.int())
	j.IdempotencyKey = d.str()
	j.Fingerprint = d.fingerprint()
	j.Actor = d.str()
	j.RunAt = d.time()
	j.CreatedAt = d.time()
	j.FirstStartedAt = d.time()
	j.FinishedAt = d.time()
	j.Result = d.bytes()
	j.LastError = d.str()
	j.Lease.JobID = d.ref(j.ID)
	j.Lease.WorkerID = d.str()
	j.Lease.Token = d.int()
	j.Lease.ExpiresAt = d.time()
	j.Unique = core.UniqueMode(d.str())
	j.UniquePeriod = time.Duration(d.int())
	j.LimitKey = d.str()
	j.SequenceKey = d.str()

	if n := int(d.int()); n > 0 {
		body.runs = make([]core.Run, n)
		for i := range body.runs {
			r := &body.runs[i]
			r.ID = d.str()
			r.JobID = d.ref(j.ID)
			r.Attempt = int(d.int())
			r.WorkerID = d.str()
			r.Token = d.int()
			r.Status = d.status()
			r.StartedAt = d.time()
			r.FinishedAt = d.time()
			r.Error = d.str()
		}
	}
	if n := d.int(); n >= 0 {
		body.checkpoints = make(map[string]core.Checkpoint, n)
		for range n {
			var c core.Checkpoint
			c.JobID = d.ref(j.ID)
			c.Step = d.str()
			c.Value = d.bytes()
			c.CreatedAt = d.time()
			body.checkpoints[c.Step] = c
		}
	}
	return body
}
