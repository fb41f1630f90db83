package admin

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/boson-go/boson/core"
)

// Bytes (payloads, results, checkpoint values) appear in the API as a JSON
// value when they hold valid JSON, and as base64 text in a sibling
// "..._base64" field otherwise. Durations are Go duration strings ("1m30s").

func splitBytes(b []byte) (json.RawMessage, string) {
	if len(b) == 0 {
		return nil, ""
	}
	if json.Valid(b) {
		return json.RawMessage(b), ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

type retryView struct {
	Initial string  `json:"initial,omitempty"`
	Factor  float64 `json:"factor,omitempty"`
	Max     string  `json:"max,omitempty"`
	Jitter  float64 `json:"jitter,omitempty"`
}

func toRetryView(p core.RetryPolicy) *retryView {
	if p.IsZero() {
		return nil
	}
	return &retryView{Initial: durString(p.Initial), Factor: p.Factor, Max: durString(p.Max), Jitter: p.Jitter}
}

type cancelView struct {
	MaxDelay    string `json:"max_delay,omitempty"`
	MaxDuration string `json:"max_duration,omitempty"`
}

type leaseView struct {
	WorkerID  string    `json:"worker_id"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

type jobView struct {
	ID             string            `json:"id"`
	Queue          string            `json:"queue"`
	Task           string            `json:"task"`
	State          core.JobState     `json:"state"`
	Payload        json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64  string            `json:"payload_base64,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Priority       int               `json:"priority"`
	Attempt        int               `json:"attempt"`
	MaxAttempts    int               `json:"max_attempts"`
	Retry          *retryView        `json:"retry,omitempty"`
	Cancel         *cancelView       `json:"cancel,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	Fingerprint    string            `json:"fingerprint,omitempty"`
	Actor          string            `json:"actor,omitempty"`
	RunAt          time.Time         `json:"run_at"`
	CreatedAt      time.Time         `json:"created_at"`
	FirstStartedAt *time.Time        `json:"first_started_at,omitempty"`
	FinishedAt     *time.Time        `json:"finished_at,omitempty"`
	Result         json.RawMessage   `json:"result,omitempty"`
	ResultBase64   string            `json:"result_base64,omitempty"`
	LastError      string            `json:"last_error,omitempty"`
	Lease          *leaseView        `json:"lease,omitempty"`
	Unique         core.UniqueMode   `json:"unique,omitempty"`
	UniquePeriod   string            `json:"unique_period,omitempty"`
	LimitKey       string            `json:"limit_key,omitempty"`
	SequenceKey    string            `json:"sequence_key,omitempty"`
}

func toJobView(j core.Job) jobView {
	v := jobView{
		ID: j.ID, Queue: j.Queue, Task: j.Task, State: j.State, Headers: j.Headers,
		Priority: j.Priority, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		Retry: toRetryView(j.Retry), IdempotencyKey: j.IdempotencyKey, Fingerprint: j.Fingerprint,
		Actor: j.Actor, RunAt: j.RunAt.UTC(), CreatedAt: j.CreatedAt.UTC(),
		FirstStartedAt: timePtr(j.FirstStartedAt), FinishedAt: timePtr(j.FinishedAt), LastError: j.LastError,
		Unique: j.Unique, UniquePeriod: durString(j.UniquePeriod), LimitKey: j.LimitKey, SequenceKey: j.SequenceKey,
	}
	v.Payload, v.PayloadBase64 = splitBytes(j.Payload)
	v.Result, v.ResultBase64 = splitBytes(j.Result)
	if !j.Cancel.IsZero() {
		v.Cancel = &cancelView{MaxDelay: durString(j.Cancel.MaxDelay), MaxDuration: durString(j.Cancel.MaxDuration)}
	}
	if j.Lease.Token != 0 {
		v.Lease = &leaseView{WorkerID: j.Lease.WorkerID, Token: j.Lease.Token, ExpiresAt: j.Lease.ExpiresAt.UTC()}
	}
	return v
}

type jobPageView struct {
	Jobs []jobView `json:"jobs"`
	Next string    `json:"next,omitempty"`
}

type enqueueView struct {
	Job    jobView `json:"job"`
	Reused bool    `json:"reused"`
}

type runView struct {
	ID         string         `json:"id"`
	JobID      string         `json:"job_id"`
	Queue      string         `json:"queue,omitempty"`
	Task       string         `json:"task,omitempty"`
	Attempt    int            `json:"attempt"`
	WorkerID   string         `json:"worker_id"`
	Token      int64          `json:"token"`
	Status     core.RunStatus `json:"status"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at,omitempty"`
	Duration   string         `json:"duration,omitempty"`
	Error      string         `json:"error,omitempty"`
}

func toRunView(r core.Run) runView {
	return runView{ID: r.ID, JobID: r.JobID, Queue: r.Queue, Task: r.Task, Attempt: r.Attempt, WorkerID: r.WorkerID, Token: r.Token,
		Status: r.Status, StartedAt: r.StartedAt.UTC(), FinishedAt: timePtr(r.FinishedAt),
		Duration: durString(r.Duration()), Error: r.Error}
}

type checkpointView struct {
	Step        string          `json:"step"`
	Value       json.RawMessage `json:"value,omitempty"`
	ValueBase64 string          `json:"value_base64,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
}

func toCheckpointView(c core.Checkpoint) checkpointView {
	v := checkpointView{Step: c.Step, CreatedAt: c.CreatedAt.UTC()}
	v.Value, v.ValueBase64 = splitBytes(c.Value)
	return v
}

type taskConfigView struct {
	Task                string     `json:"task"`
	MaxInFlight         int        `json:"max_in_flight,omitempty"`
	MaxEnqueuePerSecond int        `json:"max_enqueue_per_second,omitempty"`
	Queue               string     `json:"queue,omitempty"`
	Priority            int        `json:"priority,omitempty"`
	MaxAttempts         int        `json:"max_attempts,omitempty"`
	Retry               *retryView `json:"retry,omitempty"`
	// The flow limits, enforced at claim by a core.FlowController.
	MaxRunning               int  `json:"max_running,omitempty"`
	MaxRunningPerKey         int  `json:"max_running_per_key,omitempty"`
	MaxStartsPerSecond       int  `json:"max_starts_per_second,omitempty"`
	MaxStartsPerSecondPerKey int  `json:"max_starts_per_second_per_key,omitempty"`
	HoldSequenceOnFailure    bool `json:"hold_sequence_on_failure,omitempty"`
}

func toTaskConfigView(c core.TaskConfig) taskConfigView {
	return taskConfigView{Task: c.Task, MaxInFlight: c.MaxInFlight, MaxEnqueuePerSecond: c.MaxEnqueuePerSecond,
		Queue: c.Queue, Priority: c.Priority, MaxAttempts: c.MaxAttempts, Retry: toRetryView(c.Retry),
		MaxRunning: c.MaxRunning, MaxRunningPerKey: c.MaxRunningPerKey, MaxStartsPerSecond: c.MaxStartsPerSecond,
		MaxStartsPerSecondPerKey: c.MaxStartsPerSecondPerKey, HoldSequenceOnFailure: c.HoldSequenceOnFailure}
}

type taskView struct {
	Task    string                   `json:"task"`
	Jobs    map[core.JobState]int64  `json:"jobs"`
	Runs    map[core.RunStatus]int64 `json:"runs"`
	RunTime string                   `json:"run_time"`
	Config  *taskConfigView          `json:"config,omitempty"`
}

type queueView struct {
	Queue        string                  `json:"queue"`
	Jobs         map[core.JobState]int64 `json:"jobs"`
	Paused       bool                    `json:"paused"`
	RetentionTTL string                  `json:"retention_ttl,omitempty"`
	CleanupLimit int                     `json:"cleanup_limit,omitempty"`
	MaxRunning   int                     `json:"max_running,omitempty"`
	// Declared: the queue was declared with CreateQueue (core.QueueDeclarer).
	Declared bool `json:"declared,omitempty"`
}

func toQueueConfigView(c core.QueueConfig, jobs map[core.JobState]int64) queueView {
	if jobs == nil {
		jobs = map[core.JobState]int64{}
	}
	return queueView{Queue: c.Queue, Jobs: jobs, Paused: c.Paused, RetentionTTL: durString(c.RetentionTTL), CleanupLimit: c.CleanupLimit, MaxRunning: c.MaxRunning}
}
