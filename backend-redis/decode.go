package redisq

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
)

// Positions in a job record (R* in luaLib), counted from 0.
const (
	rTask = iota
	rState
	rPriority
	rAttempt
	rMaxAttempts
	rRunAt
	rCreatedAt
	rFirstStarted
	rFinishedAt
	rMaxDelay
	rMaxDuration
	rIdemKey
	rFingerprint
	rLeaseWorker
	rLeaseToken
	rLeaseExpires
	rReadyMember
	rRunCount
	rRunStatus
	rRunStarted
	rRunFinished
	rRunError
	rLastError
	rResult
	recordLen
)

// Positions in a job's cold field ("<id>|x"), which the client packs at
// enqueue and no script reads.
const (
	cPayload = iota
	cHeaders
	cRetry
	cActor
	coldLen
)

// coldField is the job hash field of a job's cold attributes.
func coldField(id string) string { return id + "|x" }

var errMsgpack = errors.New("redisq: malformed msgpack record")

// unpackValues decodes a concatenation of msgpack values as cmsgpack writes
// them: nil, booleans, integers, floats and strings, and arrays of them,
// whose items it returns in line (a record is one array). Strings come back
// as string, integers as int64, floats as float64.
func unpackValues(b []byte, want int) ([]any, error) {
	out := make([]any, 0, want)
	for len(b) > 0 {
		c := b[0]
		b = b[1:]
		var n int
		switch {
		case c <= 0x7f:
			out = append(out, int64(c))
			continue
		case c >= 0xe0:
			out = append(out, int64(int8(c)))
			continue
		case c >= 0xa0 && c <= 0xbf:
			n = int(c & 0x1f)
		case c >= 0x90 && c <= 0x9f:
			continue // an array header: its items follow, read as a sequence
		case c == 0xdc || c == 0xdd:
			size := 2
			if c == 0xdd {
				size = 4
			}
			if len(b) < size {
				return nil, errMsgpack
			}
			b = b[size:]
			continue
		case c == 0xc0:
			out = append(out, nil)
			continue
		case c == 0xc2 || c == 0xc3:
			out = append(out, c == 0xc3)
			continue
		case c == 0xd9 || c == 0xc4:
			if len(b) < 1 {
				return nil, errMsgpack
			}
			n, b = int(b[0]), b[1:]
		case c == 0xda || c == 0xc5:
			if len(b) < 2 {
				return nil, errMsgpack
			}
			n, b = int(binary.BigEndian.Uint16(b)), b[2:]
		case c == 0xdb || c == 0xc6:
			if len(b) < 4 {
				return nil, errMsgpack
			}
			n, b = int(binary.BigEndian.Uint32(b)), b[4:]
		default:
			size := fixedSize(c)
			if size == 0 || len(b) < size {
				return nil, errMsgpack
			}
			v := b[:size]
			b = b[size:]
			switch c {
			case 0xca:
				out = append(out, float64(math.Float32frombits(binary.BigEndian.Uint32(v))))
			case 0xcb:
				out = append(out, math.Float64frombits(binary.BigEndian.Uint64(v)))
			case 0xcc:
				out = append(out, int64(v[0]))
			case 0xcd:
				out = append(out, int64(binary.BigEndian.Uint16(v)))
			case 0xce:
				out = append(out, int64(binary.BigEndian.Uint32(v)))
			case 0xcf:
				out = append(out, int64(binary.BigEndian.Uint64(v)))
			case 0xd0:
				out = append(out, int64(int8(v[0])))
			case 0xd1:
				out = append(out, int64(int16(binary.BigEndian.Uint16(v))))
			case 0xd2:
				out = append(out, int64(int32(binary.BigEndian.Uint32(v))))
			case 0xd3:
				out = append(out, int64(binary.BigEndian.Uint64(v)))
			}
			continue
		}
		if n > len(b) {
			return nil, errMsgpack
		}
		out = append(out, string(b[:n]))
		b = b[n:]
	}
	return out, nil
}

// fixedSize is the length of the value after a msgpack number's type byte,
// or 0 for a type byte that is not a number.
func fixedSize(c byte) int {
	switch c {
	case 0xcc, 0xd0:
		return 1
	case 0xcd, 0xd1:
		return 2
	case 0xca, 0xce, 0xd2:
		return 4
	case 0xcb, 0xcf, 0xd3:
		return 8
	}
	return 0
}

// appendPackedString appends s as a msgpack string.
func appendPackedString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 1<<16:
		b = append(b, 0xda, byte(n>>8), byte(n))
	default:
		b = append(b, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, s...)
}

// appendPackedInt appends n as the shortest msgpack integer, as cmsgpack
// writes it.
func appendPackedInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 0x7f:
		return append(b, byte(n))
	case n < 0 && n >= -32:
		return append(b, byte(int8(n)))
	case n >= 0 && n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= math.MaxUint16:
		return append(b, 0xcd, byte(n>>8), byte(n))
	case n >= 0 && n <= math.MaxUint32:
		return append(b, 0xce, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(int8(n)))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// packCold packs a job's cold attributes in the order of the c* positions.
func packCold(payload []byte, headers, retry, actor string) string {
	b := make([]byte, 0, len(payload)+len(headers)+len(retry)+len(actor)+20)
	b = appendPackedString(b, string(payload))
	b = appendPackedString(b, headers)
	b = appendPackedString(b, retry)
	b = appendPackedString(b, actor)
	return string(b)
}

func str(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	case int64:
		return strconv.FormatInt(s, 10), true
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64), true
	}
	return "", false
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	s, _ := str(v)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func toTime(v any) time.Time {
	s, ok := str(v)
	if !ok || s == "" {
		return time.Time{}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

// recTime is a record's time: 0 means unset.
func recTime(v any) time.Time {
	n := toInt(v)
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

func toBytes(v any) []byte {
	s, ok := str(v)
	if !ok || s == "" {
		return nil
	}
	return []byte(s)
}

func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// unpackRecord decodes a job record.
func unpackRecord(id string, rec any) ([]any, error) {
	s, ok := str(rec)
	if !ok {
		return nil, fmt.Errorf("redisq: job %s: record %T", id, rec)
	}
	v, err := unpackValues([]byte(s), recordLen)
	if err != nil || len(v) != recordLen {
		return nil, fmt.Errorf("redisq: job %s: record of %d values, want %d: %w", id, len(v), recordLen, errMsgpack)
	}
	return v, nil
}

// decodeJob builds a job from its id, queue, record and cold field. It
// returns ok=false when the job does not exist (rec is nil).
func decodeJob(id, queue string, rec, cold any) (core.Job, bool, error) {
	if rec == nil {
		return core.Job{}, false, nil
	}
	v, err := unpackRecord(id, rec)
	if err != nil {
		return core.Job{}, false, err
	}
	cs, _ := str(cold)
	c, err := unpackValues([]byte(cs), coldLen)
	if err != nil || len(c) != coldLen {
		return core.Job{}, false, fmt.Errorf("redisq: job %s: cold attributes of %d values, want %d: %w", id, len(c), coldLen, errMsgpack)
	}
	st, _ := str(v[rState])
	j := core.Job{
		ID:             id,
		Queue:          queue,
		State:          core.JobState(st),
		Payload:        toBytes(c[cPayload]),
		Priority:       int(toInt(v[rPriority])),
		Attempt:        int(toInt(v[rAttempt])),
		MaxAttempts:    int(toInt(v[rMaxAttempts])),
		RunAt:          recTime(v[rRunAt]),
		CreatedAt:      recTime(v[rCreatedAt]),
		FirstStartedAt: recTime(v[rFirstStarted]),
		FinishedAt:     recTime(v[rFinishedAt]),
		Result:         toBytes(v[rResult]),
	}
	j.Task, _ = str(v[rTask])
	j.IdempotencyKey, _ = str(v[rIdemKey])
	j.Fingerprint, _ = str(v[rFingerprint])
	j.Actor, _ = str(c[cActor])
	j.LastError, _ = str(v[rLastError])
	j.Cancel.MaxDelay = time.Duration(toInt(v[rMaxDelay]))
	j.Cancel.MaxDuration = time.Duration(toInt(v[rMaxDuration]))
	if h, _ := str(c[cHeaders]); h != "" {
		if err := json.Unmarshal([]byte(h), &j.Headers); err != nil {
			return core.Job{}, false, fmt.Errorf("redisq: job %s: headers: %w", id, err)
		}
	}
	if rp, _ := str(c[cRetry]); rp != "" {
		if err := json.Unmarshal([]byte(rp), &j.Retry); err != nil {
			return core.Job{}, false, fmt.Errorf("redisq: job %s: retry policy: %w", id, err)
		}
	}
	if tok := toInt(v[rLeaseToken]); tok > 0 {
		j.Lease = core.Lease{JobID: id, Token: tok, ExpiresAt: recTime(v[rLeaseExpires])}
		j.Lease.WorkerID, _ = str(v[rLeaseWorker])
	}
	return j, true, nil
}

// lastRun returns the run a job record holds (its latest), if any. The
// record does not hold the run's id (a spilled run record does): it is
// core.RunID of the job and its token, which the claim script makes the
// same way.
func lastRun(id string, v []any) (core.Run, bool) {
	if toInt(v[rRunCount]) == 0 {
		return core.Run{}, false
	}
	return makeRun(id, core.RunID(id, toInt(v[rLeaseToken])), v[rAttempt], v[rLeaseWorker], v[rLeaseToken], v[rRunStatus], v[rRunStarted], v[rRunFinished], v[rRunError]), true
}

// spilledRun decodes an earlier run from the run hash: id, attempt, worker,
// token, status, start, finish, error.
func spilledRun(jobID string, rec any) (core.Run, error) {
	s, _ := str(rec)
	v, err := unpackValues([]byte(s), 8)
	if err != nil || len(v) != 8 {
		return core.Run{}, fmt.Errorf("redisq: job %s: run record of %d values, want 8: %w", jobID, len(v), errMsgpack)
	}
	return makeRun(jobID, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]), nil
}

func makeRun(jobID string, id, attempt, worker, tok, status, started, finished, errText any) core.Run {
	r := core.Run{
		JobID:      jobID,
		Attempt:    int(toInt(attempt)),
		Token:      toInt(tok),
		StartedAt:  recTime(started),
		FinishedAt: recTime(finished),
	}
	r.ID, _ = str(id)
	r.WorkerID, _ = str(worker)
	s, _ := str(status)
	r.Status = core.RunStatus(s)
	r.Error, _ = str(errText)
	return r
}

// decodeScriptJob decodes a job a script returned as {id, record, cold}.
func decodeScriptJob(queue string, v any) (core.Job, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 3 {
		return core.Job{}, fmt.Errorf("redisq: unexpected job reply %T", v)
	}
	id, _ := str(arr[0])
	j, found, err := decodeJob(id, queue, arr[1], arr[2])
	if err != nil {
		return core.Job{}, err
	}
	if !found {
		return core.Job{}, fmt.Errorf("redisq: job %s vanished", id)
	}
	return j, nil
}

// reply splits a script reply into its status word and the rest. It
// refuses a reply whose rest is shorter than the status promises (min maps
// a status to its least length), so that callers can index it.
func reply(res any, min map[string]int) (string, []any, error) {
	arr, ok := res.([]any)
	if !ok || len(arr) == 0 {
		return "", nil, fmt.Errorf("redisq: unexpected script reply %T", res)
	}
	s, _ := str(arr[0])
	if len(arr)-1 < min[s] {
		return "", nil, fmt.Errorf("redisq: script reply %q has %d values, want at least %d", s, len(arr)-1, min[s])
	}
	return s, arr[1:], nil
}
