package core

import "fmt"

// JobState is the state of a job. The zero value is not a valid state.
type JobState string

// The states a job moves through. See the package documentation for the
// transitions between them.
const (
	// StateQueued jobs wait for a worker; their RunAt may lie in the future.
	StateQueued JobState = "queued"
	// StateRunning jobs are claimed by a worker under a lease.
	StateRunning JobState = "running"
	// StateSleeping jobs released their claim until RunAt (a durable sleep).
	StateSleeping JobState = "sleeping"
	// StateSucceeded jobs completed; their Result holds the output.
	StateSucceeded JobState = "succeeded"
	// StateFailed jobs ended with an error, terminally or with their attempts spent.
	StateFailed JobState = "failed"
	// StateCancelled jobs were cancelled explicitly or by a deadline.
	StateCancelled JobState = "cancelled"
)

// AllStates lists every job state, in life-cycle order.
var AllStates = []JobState{StateQueued, StateRunning, StateSleeping, StateSucceeded, StateFailed, StateCancelled}

// Terminal reports whether s is a final state: succeeded, failed or cancelled.
func (s JobState) Terminal() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCancelled
}

// Active reports whether s counts against a task's in-flight limit:
// queued, running or sleeping.
func (s JobState) Active() bool {
	return s == StateQueued || s == StateRunning || s == StateSleeping
}

// Valid reports whether s is one of the defined states.
func (s JobState) Valid() bool {
	switch s {
	case StateQueued, StateRunning, StateSleeping, StateSucceeded, StateFailed, StateCancelled:
		return true
	}
	return false
}

// ParseJobState returns the state named s, or an error wrapping
// [ErrInvalidArgument].
func ParseJobState(s string) (JobState, error) {
	st := JobState(s)
	if !st.Valid() {
		return "", fmt.Errorf("%w: unknown job state %q", ErrInvalidArgument, s)
	}
	return st, nil
}

// RunStatus is the outcome of one run (one claim of a job).
type RunStatus string

// The statuses of a run.
const (
	// RunRunning is a run whose claim is still held.
	RunRunning RunStatus = "running"
	// RunSucceeded is a run that completed the job.
	RunSucceeded RunStatus = "succeeded"
	// RunFailed is a run that ended with an error (retried or terminal).
	RunFailed RunStatus = "failed"
	// RunSleeping is a run that released its claim with a durable sleep.
	RunSleeping RunStatus = "sleeping"
	// RunCancelled is a run whose job was cancelled while it ran.
	RunCancelled RunStatus = "cancelled"
	// RunLost is a run whose lease expired and was rescued.
	RunLost RunStatus = "lost"
)

// AllRunStatuses lists every run status.
var AllRunStatuses = []RunStatus{RunRunning, RunSucceeded, RunFailed, RunSleeping, RunCancelled, RunLost}

// Valid reports whether s is one of [AllRunStatuses].
func (s RunStatus) Valid() bool {
	for _, v := range AllRunStatuses {
		if s == v {
			return true
		}
	}
	return false
}
