package redisq

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
)

// record is a job's record as the scripts store it (RF in luaLib): a
// fixed layout of big-endian doubles, codes and length-prefixed strings.
type record struct {
	runAt, created, deadline int64
	state                    core.JobState
	priority                 int
	attempt, maxAttempts     int64
	firstStarted, finished   int64
	maxDuration              int64 // µs
	token                    int64
	runCount                 int64
	runStatus                core.RunStatus
	runStarted, runFinished  int64
	task, worker, runError   string
	lastError, idemKey       string
	// the flow fields, after the base layout (RX in luaLib) when the job
	// has any
	unique                core.UniqueMode
	limitKey, sequenceKey string
	uniquePeriod          time.Duration
}

// uniqueCodes are the record's codes of the unique modes (RUQ in luaLib).
var uniqueCodes = []core.UniqueMode{core.UniqueUntilRetention, core.UniqueWhileActive, core.UniqueByPeriod}

// stateCodes and runCodes are the codes of the record's states and run
// statuses (SN and RSN in luaLib), from 1.
var (
	stateCodes = []core.JobState{core.StateQueued, core.StateRunning, core.StateSleeping, core.StateSucceeded, core.StateFailed, core.StateCancelled}
	runCodes   = []core.RunStatus{core.RunRunning, core.RunSucceeded, core.RunFailed, core.RunSleeping, core.RunCancelled, core.RunLost}
)

// recordReader reads the values of a record in order; err is set, and
// every later read gives zero values, once the record ends too soon.
type recordReader struct {
	b   []byte
	err bool
}

func (r *recordReader) take(n int) []byte {
	if r.err || len(r.b) < n {
		r.err = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// num reads a double that holds an integer.
func (r *recordReader) num() int64 {
	v := r.take(8)
	if v == nil {
		return 0
	}
	return int64(math.Float64frombits(binary.BigEndian.Uint64(v)))
}

func (r *recordReader) code() int {
	v := r.take(1)
	if v == nil {
		return 0
	}
	return int(v[0])
}

func (r *recordReader) str() string {
	v := r.take(2)
	if v == nil {
		return ""
	}
	return string(r.take(int(binary.BigEndian.Uint16(v))))
}

// parseRecord decodes a job's record.
func parseRecord(id string, rec any) (record, error) {
	s, ok := str(rec)
	if !ok {
		return record{}, fmt.Errorf("redisq: job %s: record %T", id, rec)
	}
	r := recordReader{b: []byte(s)}
	var v record
	v.runAt, v.created, v.deadline = r.num(), r.num(), r.num()
	r.code() // in the ready set
	st := r.code()
	if p := r.take(2); p != nil {
		v.priority = int(int16(binary.BigEndian.Uint16(p)))
	}
	v.attempt, v.maxAttempts = r.num(), r.num()
	v.firstStarted, v.finished = r.num(), r.num()
	v.maxDuration = r.num()
	v.token = r.num()
	v.runCount = r.num()
	rs := r.code()
	v.runStarted, v.runFinished = r.num(), r.num()
	v.task, v.worker, v.runError = r.str(), r.str(), r.str()
	v.lastError, v.idemKey = r.str(), r.str()
	if !r.err && len(r.b) > 0 {
		u := r.code()
		v.limitKey, v.sequenceKey = r.str(), r.str()
		p, _ := strconv.ParseInt(r.str(), 10, 64)
		v.uniquePeriod = time.Duration(p)
		if u >= len(uniqueCodes) {
			r.err = true
		} else {
			v.unique = uniqueCodes[u]
		}
	}
	if r.err || len(r.b) != 0 || st < 1 || st > len(stateCodes) || rs > len(runCodes) {
		return record{}, fmt.Errorf("redisq: job %s: record of %d bytes does not fit its layout: %w", id, len(s), errRecord)
	}
	v.state = stateCodes[st-1]
	if rs > 0 {
		v.runStatus = runCodes[rs-1]
	}
	return v, nil
}

var errRecord = errors.New("redisq: malformed job record")

// appendNum appends n as a big-endian double (exact below 2^53).
func appendNum(b []byte, n int64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(float64(n)))
}

// appendStr appends s after its length (2 bytes, big-endian): the
// record's strings are names, keys and errors, all shorter than 64 KiB.
func appendStr(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

// packRecord packs a new job's record from its state to its idempotency
// key: the enqueue script puts its run at, creation time, deadline and
// ready flag before it (25 bytes), since they depend on the script's clock.
func packRecord(j core.Job) string {
	b := make([]byte, 0, 128+len(j.Task)+len(j.IdempotencyKey))
	b = append(b, 1) // queued
	b = binary.BigEndian.AppendUint16(b, uint16(int16(j.Priority)))
	b = appendNum(b, 0) // attempt
	b = appendNum(b, int64(j.MaxAttempts))
	b = appendNum(b, 0) // first started
	b = appendNum(b, 0) // finished
	var mu int64
	if j.Cancel.MaxDuration > 0 {
		mu = durMicros(j.Cancel.MaxDuration)
	}
	b = appendNum(b, mu)
	b = appendNum(b, 0) // token
	b = appendNum(b, 0) // run count
	b = append(b, 0)    // no run
	b = appendNum(b, 0) // run start
	b = appendNum(b, 0) // run finish
	b = appendStr(b, j.Task)
	b = appendStr(b, "") // worker
	b = appendStr(b, "") // run error
	b = appendStr(b, "") // last error
	b = appendStr(b, j.IdempotencyKey)
	if hasFlow(j) {
		b = append(b, byte(slices.Index(uniqueCodes, j.Unique)))
		b = appendStr(b, j.LimitKey)
		b = appendStr(b, j.SequenceKey)
		b = appendStr(b, strconv.FormatInt(int64(j.UniquePeriod), 10))
	}
	return string(b)
}

// hasFlow reports whether a job carries flow fields, which its record
// then holds after the base layout.
func hasFlow(j core.Job) bool {
	return j.Unique != core.UniqueUntilRetention || j.LimitKey != "" || j.SequenceKey != ""
}

// flowArg is a new job's flow value for the enqueue script:
// "<unique period µs>|<sequence key>", or "" without either.
func flowArg(j core.Job) string {
	if j.SequenceKey == "" && j.Unique != core.UniqueByPeriod {
		return ""
	}
	var per int64
	if j.Unique == core.UniqueByPeriod {
		per = durMicros(j.UniquePeriod)
	}
	return strconv.FormatInt(per, 10) + "|" + j.SequenceKey
}

// Positions in a job's cold field ("<id>|x"), which the client packs at
// enqueue and no script reads.
const (
	cPayload = iota
	cHeaders
	cRetry
	cActor
	cMaxDelay
	cMaxDuration
	cFingerprint
	coldLen
)

// coldField is the job hash field of a job's cold attributes, resultField
// that of its result.
func coldField(id string) string   { return id + "|x" }
func resultField(id string) string { return id + "|r" }

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
func packCold(j core.Job, headers, retry string) string {
	b := make([]byte, 0, len(j.Payload)+len(headers)+len(retry)+len(j.Actor)+len(j.Fingerprint)+40)
	b = appendPackedString(b, string(j.Payload))
	b = appendPackedString(b, headers)
	b = appendPackedString(b, retry)
	b = appendPackedString(b, j.Actor)
	b = appendPackedInt(b, int64(j.Cancel.MaxDelay))
	b = appendPackedInt(b, int64(j.Cancel.MaxDuration))
	b = appendPackedString(b, j.Fingerprint)
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

// decodeJob builds a job from its id, queue, record, cold field, result
// and lease expiry (its score in the lease set, nil unless it runs). It
// returns ok=false when the job does not exist (rec is nil).
func decodeJob(id, queue string, rec, cold, result, expires any) (core.Job, bool, error) {
	if rec == nil {
		return core.Job{}, false, nil
	}
	v, err := parseRecord(id, rec)
	if err != nil {
		return core.Job{}, false, err
	}
	cs, _ := str(cold)
	c, err := unpackValues([]byte(cs), coldLen)
	if err != nil || len(c) != coldLen {
		return core.Job{}, false, fmt.Errorf("redisq: job %s: cold attributes of %d values, want %d: %w", id, len(c), coldLen, errMsgpack)
	}
	j := core.Job{
		ID:             id,
		Queue:          queue,
		Task:           v.task,
		State:          v.state,
		Payload:        toBytes(c[cPayload]),
		Priority:       v.priority,
		Attempt:        int(v.attempt),
		MaxAttempts:    int(v.maxAttempts),
		RunAt:          microTime(v.runAt),
		CreatedAt:      microTime(v.created),
		FirstStartedAt: microTime(v.firstStarted),
		FinishedAt:     microTime(v.finished),
		IdempotencyKey: v.idemKey,
		Unique:         v.unique,
		UniquePeriod:   v.uniquePeriod,
		LimitKey:       v.limitKey,
		SequenceKey:    v.sequenceKey,
		LastError:      v.lastError,
		Result:         toBytes(result),
	}
	j.Fingerprint, _ = str(c[cFingerprint])
	j.Actor, _ = str(c[cActor])
	j.Cancel.MaxDelay = time.Duration(toInt(c[cMaxDelay]))
	j.Cancel.MaxDuration = time.Duration(toInt(c[cMaxDuration]))
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
	if v.token > 0 {
		j.Lease = core.Lease{JobID: id, Token: v.token, WorkerID: v.worker}
		if v.state == core.StateRunning {
			j.Lease.ExpiresAt = microTime(toInt(expires))
		}
	}
	return j, true, nil
}

// microTime is a record's time: 0 means unset.
func microTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// lastRun returns the run a job record holds (its latest), if any. The
// record does not hold the run's id (a spilled run record does): it is
// core.RunID of the job and its token, which the claim script makes the
// same way.
func lastRun(id string, v record) (core.Run, bool) {
	if v.runCount == 0 {
		return core.Run{}, false
	}
	return core.Run{
		ID:         core.RunID(id, v.token),
		JobID:      id,
		Attempt:    int(v.attempt),
		WorkerID:   v.worker,
		Token:      v.token,
		Status:     v.runStatus,
		StartedAt:  microTime(v.runStarted),
		FinishedAt: microTime(v.runFinished),
		Error:      v.runError,
	}, true
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

// decodeScriptJob decodes a job a script returned as {id, record, cold}
// or {id, record, cold, result}; expires is its lease expiry when it runs.
func decodeScriptJob(queue string, v, expires any) (core.Job, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 3 || len(arr) > 4 {
		return core.Job{}, fmt.Errorf("redisq: unexpected job reply %T", v)
	}
	id, _ := str(arr[0])
	var result any
	if len(arr) == 4 {
		result = arr[3]
	}
	j, found, err := decodeJob(id, queue, arr[1], arr[2], result, expires)
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
