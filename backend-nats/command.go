package natsq

import (
	"encoding/json"
	"time"

	"github.com/boson-go/boson/core"
)

// op names the kind of a command.
type op string

const (
	opEnqueue    op = "enqueue"
	opClaim      op = "claim"
	opHeartbeat  op = "heartbeat"
	opComplete   op = "complete"
	opFail       op = "fail"
	opSleep      op = "sleep"
	opCheckpoint op = "checkpoint"
	opRescue     op = "rescue"
	opCancel     op = "cancel"
	opRetry      op = "retry"
	opTaskConfig op = "task_config"
	opQueueCfg   op = "queue_config"
	opCleanup    op = "cleanup"
	opDeleteJob  op = "delete_job"
	opDeleteQ    op = "delete_queue"
	// opCreateQueue declares a queue (core.QueueDeclarer); version 4.
	opCreateQueue op = "create_queue"
	// opAwait parks a running job on other jobs (core.Awaiter); version 5.
	opAwait op = "await"
	// opBulk is one step of a bulk action (core.BulkActor); version 6.
	opBulk op = "bulk"
	// opGroup carries several commands of one process in one message.
	opGroup op = "group"
)

// commandVersion is the newest command version this replica applies. A
// command carries in V the lowest version that applies it correctly: 0
// for the commands every version knows, 2 for the deletions (opDeleteJob,
// opDeleteQ), 3 for the commands that use flow control (an enqueue of a
// job with a limit key, a sequence key or a unique mode, and a task or
// queue config with a flow limit), which a version without flow control
// would apply differently, 4 for opCreateQueue, 5 for opAwait, 6 for
// opBulk. A replica
// meets a command of a newer version, or one whose kind it does not know,
// by stopping (see failStopLocked) rather than by skipping it, so replicas
// of two versions never drift apart: upgrade every process of a namespace
// before any of them issues such a command.
const commandVersion = 6

// flowVersion is the command version of commands that use flow control.
const flowVersion = 3

// deleteVersion is the version of the deletion commands.
const deleteVersion = 2

// declareVersion is the version of opCreateQueue.
const declareVersion = 4

// awaitVersion is the version of opAwait. A replica of an older version
// stops at the first one, before any wait exists that its transitions
// would fail to count.
const awaitVersion = 5

// bulkVersion is the version of opBulk. A replica of an older version
// stops at the first one (a command of a newer version) rather than skip
// a step that every newer replica applies.
const bulkVersion = 6

// command is one entry of the log. It carries everything a replica needs to
// apply it deterministically: the issuer's time, the ids it chose, and the
// already validated input. Replicas never consult their own clock, options
// or randomness while applying.
type command struct {
	Op op `json:"op"`
	// V is the command's version; see commandVersion.
	V      int    `json:"v,omitempty"`
	Origin string `json:"o"`
	Req    uint64 `json:"r"`
	// Now is the time the command is decided at when its issuer has a
	// DecisionClock. Zero — the production case — means the timestamp the
	// server stored the command's message with; applying sets it to that.
	Now time.Time `json:"now"`
	// serverTime records, while applying, that Now came from the server.
	serverTime bool

	Jobs        []core.Job        `json:"jobs,omitempty"`
	Queue       string            `json:"queue,omitempty"`
	WorkerID    string            `json:"worker,omitempty"`
	Limit       int               `json:"limit,omitempty"`
	TTL         time.Duration     `json:"ttl,omitempty"`
	Lease       core.Lease        `json:"lease"`
	Completions []completionItem  `json:"completions,omitempty"`
	Error       string            `json:"error,omitempty"`
	RetryAt     time.Time         `json:"retry_at"`
	Terminal    bool              `json:"terminal,omitempty"`
	Until       time.Time         `json:"until"`
	Step        string            `json:"step,omitempty"`
	Value       []byte            `json:"value,omitempty"`
	JobID       string            `json:"job_id,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	TaskConfig  *core.TaskConfig  `json:"task_config,omitempty"`
	QueueConfig *core.QueueConfig `json:"queue_config,omitempty"`
	Before      time.Time         `json:"before"`
	// Force deletes a running job too.
	Force bool `json:"force,omitempty"`
	// Await is the request of an opAwait command; its lease is Lease.
	Await *awaitCmd `json:"await,omitempty"`
	// Bulk is the step of an opBulk command; its cancellation reason is
	// Reason and its force Force.
	Bulk *bulkCmd `json:"bulk,omitempty"`
	// Group holds the encoded commands of an opGroup command.
	Group []json.RawMessage `json:"group,omitempty"`
}

// completionItem is one valid item of a Complete batch and its index in the
// caller's batch.
type completionItem struct {
	Index  int        `json:"i"`
	Lease  core.Lease `json:"lease"`
	Result []byte     `json:"result,omitempty"`
}

// outcome is what applying a command produced, handed back to the issuer.
type outcome struct {
	err      error
	enqueued []core.EnqueueResult
	jobs     []core.Job
	job      core.Job
	lease    core.Lease
	errs     []error
	state    core.JobState
	value    []byte
	rescue   core.RescueResult
	count    int
	done     bool
	queueCfg core.QueueConfig
	await    core.AwaitResult
}
