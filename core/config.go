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
}
