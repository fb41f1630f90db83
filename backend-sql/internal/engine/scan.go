package engine

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// jobColumnDefs lists the columns ScanJob reads, in order, each with a
// zero value of its type (see jobZeros).
var jobColumnDefs = [][2]string{
	{"id", "''"}, {"queue", "''"}, {"task", "''"}, {"payload", "NULL::bytea"}, {"headers", "''"},
	{"priority", "0"}, {"state", "''"}, {"attempt", "0"}, {"max_attempts", "0"}, {"retry", "''"},
	{"max_delay", "0"}, {"max_duration", "0"}, {"coalesce(idempotency_key, '')", "''"},
	{"fingerprint", "''"}, {"actor", "''"}, {"run_at", "0"}, {"created_at", "0"},
	{"first_started_at", "0"}, {"finished_at", "0"}, {"result", "NULL::bytea"}, {"last_error", "''"},
	{"worker_id", "''"}, {"token", "0"}, {"lease_expires_at", "0"}, {"unique_mode", "''"},
	{"unique_period", "0"}, {"coalesce(limit_key, '')", "''"}, {"coalesce(sequence_key, '')", "''"},
}

// jobColumns lists the columns ScanJob reads, in order.
var jobColumns = column(jobColumnDefs, 0)

// jobZeros returns a select list of zero values in the shape of JobCols,
// for a row that a UNION adds to job rows.
func jobZeros() string { return strings.Join(column(jobColumnDefs, 1), ", ") }

// column returns the i-th field of each definition.
func column(defs [][2]string, i int) []string {
	out := make([]string, len(defs))
	for k, d := range defs {
		out[k] = d[i]
	}
	return out
}

// JobCols returns the job column list, each qualified with alias when set.
func JobCols(alias string) string {
	if alias == "" {
		return strings.Join(jobColumns, ", ")
	}
	out := make([]string, len(jobColumns))
	for i, c := range jobColumns {
		if strings.HasPrefix(c, "coalesce(") {
			out[i] = "coalesce(" + alias + "." + strings.TrimPrefix(c, "coalesce(")
		} else {
			out[i] = alias + "." + c
		}
	}
	return strings.Join(out, ", ")
}

// ScanJob reads one row of JobCols, after any extra leading destinations.
func ScanJob(rows Rows, extra ...any) (core.Job, error) {
	var j core.Job
	var headers, retry, state, unique string
	var maxDelay, maxDuration, runAt, createdAt, firstStarted, finished, expires, period int64
	dest := append(extra,
		&j.ID, &j.Queue, &j.Task, &j.Payload, &headers, &j.Priority, &state, &j.Attempt,
		&j.MaxAttempts, &retry, &maxDelay, &maxDuration, &j.IdempotencyKey,
		&j.Fingerprint, &j.Actor, &runAt, &createdAt, &firstStarted, &finished,
		&j.Result, &j.LastError, &j.Lease.WorkerID, &j.Lease.Token, &expires,
		&unique, &period, &j.LimitKey, &j.SequenceKey)
	if err := rows.Scan(dest...); err != nil {
		return core.Job{}, err
	}
	j.State = core.JobState(state)
	j.Unique, j.UniquePeriod = core.UniqueMode(unique), time.Duration(period)
	j.Cancel = core.CancellationPolicy{MaxDelay: time.Duration(maxDelay), MaxDuration: time.Duration(maxDuration)}
	j.RunAt, j.CreatedAt = fromUS(runAt), fromUS(createdAt)
	j.FirstStartedAt, j.FinishedAt = fromUS(firstStarted), fromUS(finished)
	if j.Lease.Token > 0 {
		j.Lease.JobID = j.ID
	}
	j.Lease.ExpiresAt = fromUS(expires)
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	if len(j.Result) == 0 {
		j.Result = nil
	}
	if headers != "" {
		if err := json.Unmarshal([]byte(headers), &j.Headers); err != nil {
			return core.Job{}, fmt.Errorf("job %s: headers: %w", j.ID, err)
		}
	}
	if retry != "" {
		if err := json.Unmarshal([]byte(retry), &j.Retry); err != nil {
			return core.Job{}, fmt.Errorf("job %s: retry policy: %w", j.ID, err)
		}
	}
	return j, nil
}

// EncodeHeaders stores headers as JSON, or "" when there are none.
func EncodeHeaders(h map[string]string) string {
	if len(h) == 0 {
		return ""
	}
	b, _ := json.Marshal(h)
	return string(b)
}

// EncodeRetry stores a retry policy as JSON, or "" for the zero policy.
func EncodeRetry(p core.RetryPolicy) string {
	if p.IsZero() {
		return ""
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// NullKey is the idempotency key column value: NULL when there is none.
func NullKey(k string) any {
	if k == "" {
		return nil
	}
	return k
}

// DeadlineUS is the stored deadline_at of a job not yet started: its
// MaxDelay deadline, or NULL.
func DeadlineUS(j core.Job) any {
	if d, ok := core.Deadline(j); ok {
		return toUS(d.Add(999 * time.Nanosecond).Truncate(time.Microsecond))
	}
	return nil
}

// ToUS encodes a time as UTC microseconds (0 for the zero time).
func ToUS(t time.Time) int64 { return toUS(t) }

// CeilUS converts a duration to microseconds, rounding up.
func CeilUS(d time.Duration) int64 { return ceilUS(d) }

// collect reads every job row.
func collectJobs(rows Rows, err error) ([]core.Job, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []core.Job
	for rows.Next() {
		j, err := ScanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// CollectJobs reads every job row of a JobCols query.
func CollectJobs(rows Rows, err error) ([]core.Job, error) { return collectJobs(rows, err) }

// SortClaimOrder sorts jobs by (priority, run_at, id).
func SortClaimOrder(jobs []core.Job) {
	sort.Slice(jobs, func(a, b int) bool {
		x, y := jobs[a], jobs[b]
		if x.Priority != y.Priority {
			return x.Priority < y.Priority
		}
		if !x.RunAt.Equal(y.RunAt) {
			return x.RunAt.Before(y.RunAt)
		}
		return x.ID < y.ID
	})
}

// Deadline reasons, as core.DeadlinePassed words them.
const (
	ReasonMaxDelay    = "deadline exceeded: max delay before first start"
	ReasonMaxDuration = "deadline exceeded: max duration from first start"
)
