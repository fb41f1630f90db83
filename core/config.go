package core

import "time"

// TaskConfig holds per-task defaults and limits. Backends enforce the limits
// at enqueue; the runtime applies the defaults at spawn. Zero fields mean
// "no limit" or "no default".
type TaskConfig struct {
	Task string `json:"task"`
	// MaxInFlight caps the task's active (queued, running, sleeping) jobs.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// MaxEnqueuePerSecond caps how many jobs of the task are created within
	// any one-second window of the backend's clock.
	MaxEnqueuePerSecond int `json:"max_enqueue_per_second,omitempty"`
	// Defaults applied by the runtime when a spawn does not set them.
	Queue       string      `json:"queue,omitempty"`
	Priority    int         `json:"priority,omitempty"`
	MaxAttempts int         `json:"max_attempts,omitempty"`
	Retry       RetryPolicy `json:"retry,omitempty"`

	// Flow limits, enforced at claim by a [FlowController]; 0 means no
	// limit, and each lies in [0, MaxFlowLimit].
	//
	// MaxRunning caps the task's running jobs, across every queue.
	MaxRunning int `json:"max_running,omitempty"`
	// MaxRunningPerKey caps the task's running jobs that share one
	// LimitKey; jobs without a key are not limited by it.
	MaxRunningPerKey int `json:"max_running_per_key,omitempty"`
	// MaxStartsPerSecond caps the claims of the task's jobs within each
	// second of the store's clock (windows aligned to whole seconds; every
	// claim counts, a wake from a sleep included).
	MaxStartsPerSecond int `json:"max_starts_per_second,omitempty"`
	// MaxStartsPerSecondPerKey caps those claims per LimitKey.
	MaxStartsPerSecondPerKey int `json:"max_starts_per_second_per_key,omitempty"`
	// HoldSequenceOnFailure keeps a failed job of the task at the head of
	// its sequence: the sequence waits until the job is retried (it runs
	// next) or deleted. By default a failed or cancelled job releases its
	// sequence; a cancelled job always does.
	HoldSequenceOnFailure bool `json:"hold_sequence_on_failure,omitempty"`
}

// QueueConfig holds a queue's persisted settings. A queue that has none
// stored behaves as the zero QueueConfig: not paused, retention by the
// runtime's defaults.
type QueueConfig struct {
	Queue string `json:"queue"`
	// Paused queues hand out no claims. Enqueue still works.
	Paused bool `json:"paused,omitempty"`
	// RetentionTTL is how long terminal jobs are kept; 0 means the runtime default.
	RetentionTTL time.Duration `json:"retention_ttl,omitempty"`
	// CleanupLimit bounds deletions per cleanup pass; 0 means the runtime default.
	CleanupLimit int `json:"cleanup_limit,omitempty"`
	// MaxRunning caps the queue's running jobs at claim, across every
	// worker; 0 means no limit. Enforced by a [FlowController].
	MaxRunning int `json:"max_running,omitempty"`
}

// TaskStats aggregates one task's jobs and runs.
type TaskStats struct {
	Task string `json:"task"`
	// Jobs counts the task's jobs by state; absent states count zero.
	Jobs map[JobState]int64 `json:"jobs"`
	// Runs counts the task's runs by status; absent statuses count zero.
	Runs map[RunStatus]int64 `json:"runs"`
	// RunTime is the summed duration of the task's finished runs.
	RunTime time.Duration `json:"run_time"`
}

// QueueInfo describes one queue: its job counts and whether it is paused.
type QueueInfo struct {
	Queue  string             `json:"queue"`
	Jobs   map[JobState]int64 `json:"jobs"`
	Paused bool               `json:"paused"`
	// Declared reports that the queue was declared with
	// [QueueDeclarer.CreateQueue] and not deleted since; always false on a
	// store without that capability.
	Declared bool `json:"declared"`
}
