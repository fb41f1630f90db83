package redisq

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
)

// jobFields are the per-job fields of the job hash, in the order of F in
// luaLib. A job's field f is stored under "<id>|<f>".
var jobFields = []string{"t", "p", "h", "pr", "st", "a", "ma", "rp", "md", "mu", "ik", "fp", "ac", "ra", "ca", "fs", "fa", "r", "le", "lw", "lt", "lx"}

const (
	fTask = iota
	fPayload
	fHeaders
	fPriority
	fState
	fAttempt
	fMaxAttempts
	fRetry
	fMaxDelay
	fMaxDuration
	fIdemKey
	fFingerprint
	fActor
	fRunAt
	fCreatedAt
	fFirstStarted
	fFinishedAt
	fResult
	fLastError
	fLeaseWorker
	fLeaseToken
	fLeaseExpires
)

// jobFieldNames returns the hash fields of job id in jobFields order.
func jobFieldNames(id string) []string {
	out := make([]string, len(jobFields))
	for i, f := range jobFields {
		out[i] = id + "|" + f
	}
	return out
}

func str(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	case int64:
		return strconv.FormatInt(s, 10), true
	}
	return "", false
}

func toInt(v any) int64 {
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

func toBytes(v any) []byte {
	s, ok := str(v)
	if !ok || s == "" {
		return nil
	}
	return []byte(s)
}

func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// decodeJob builds a job from its id, queue and field values in jobFields
// order. It returns ok=false when the job does not exist.
func decodeJob(id, queue string, v []any) (core.Job, bool, error) {
	if len(v) != len(jobFields) {
		return core.Job{}, false, fmt.Errorf("redisq: job %s: %d fields, want %d", id, len(v), len(jobFields))
	}
	st, ok := str(v[fState])
	if !ok {
		return core.Job{}, false, nil
	}
	j := core.Job{
		ID:             id,
		Queue:          queue,
		State:          core.JobState(st),
		Payload:        toBytes(v[fPayload]),
		Priority:       int(toInt(v[fPriority])),
		Attempt:        int(toInt(v[fAttempt])),
		MaxAttempts:    int(toInt(v[fMaxAttempts])),
		RunAt:          toTime(v[fRunAt]),
		CreatedAt:      toTime(v[fCreatedAt]),
		FirstStartedAt: toTime(v[fFirstStarted]),
		FinishedAt:     toTime(v[fFinishedAt]),
		Result:         toBytes(v[fResult]),
	}
	j.Task, _ = str(v[fTask])
	j.IdempotencyKey, _ = str(v[fIdemKey])
	j.Fingerprint, _ = str(v[fFingerprint])
	j.Actor, _ = str(v[fActor])
	j.LastError, _ = str(v[fLastError])
	j.Cancel.MaxDelay = time.Duration(toInt(v[fMaxDelay]))
	j.Cancel.MaxDuration = time.Duration(toInt(v[fMaxDuration]))
	if h, _ := str(v[fHeaders]); h != "" {
		if err := json.Unmarshal([]byte(h), &j.Headers); err != nil {
			return core.Job{}, false, fmt.Errorf("redisq: job %s: headers: %w", id, err)
		}
	}
	if rp, _ := str(v[fRetry]); rp != "" {
		if err := json.Unmarshal([]byte(rp), &j.Retry); err != nil {
			return core.Job{}, false, fmt.Errorf("redisq: job %s: retry policy: %w", id, err)
		}
	}
	if tok := toInt(v[fLeaseToken]); tok > 0 {
		j.Lease = core.Lease{JobID: id, Token: tok, ExpiresAt: toTime(v[fLeaseExpires])}
		j.Lease.WorkerID, _ = str(v[fLeaseWorker])
	}
	return j, true, nil
}

// decodeScriptJob decodes a job a script returned as {id, fields...}.
func decodeScriptJob(queue string, v any) (core.Job, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != len(jobFields)+1 {
		return core.Job{}, fmt.Errorf("redisq: unexpected job reply %T", v)
	}
	id, _ := str(arr[0])
	j, found, err := decodeJob(id, queue, arr[1:])
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
