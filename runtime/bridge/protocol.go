package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/boson-go/boson/core"
)

// EnvSocket names the environment variable that holds the path of the
// bridge's Unix socket in a subprocess started by a CommandExecutor with
// Bridge set.
const EnvSocket = "BOSON_BRIDGE_SOCKET"

// MaxLine bounds one line of the protocol, in either direction: a
// checkpoint value (at most a megabyte by the store's default limits) with
// room for JSON escaping and the envelope.
const MaxLine = 4 << 20

// Operations a child may request.
const (
	// OpStepGet reads the committed value of step Name: the response is
	// Found with its Value, or not Found. A miss after the attempt's lease
	// was lost is refused with the code CodeLeaseLost.
	OpStepGet = "step.get"
	// OpStepSave commits Value (JSON) as the value of step Name unless a
	// value is committed already, and answers with the committed value:
	// the first write wins.
	OpStepSave = "step.save"
	// OpSleep durably sleeps Name until Until (RFC 3339) or for DelayMS
	// milliseconds from the first time the task reached it. The response
	// is Done when the wake time has passed, else Suspend with the wake
	// time: the child must then exit, the attempt releases its claim, and
	// the task runs again from the start at the wake time.
	OpSleep = "sleep"
	// OpAwait waits for the job Job, in another queue than the calling
	// task's, and answers with its result as Value (checkpointed, so a
	// later attempt replays it).
	OpAwait = "await"
	// OpHeartbeat renews the attempt's lease at the store now and answers
	// with its new expiry, or CodeLeaseLost: it proves the child still
	// owns the attempt. The worker renews the lease on its own as well.
	OpHeartbeat = "heartbeat"
)

// Error codes of a refused request.
const (
	// CodeLeaseLost: the attempt's lease is lost (another attempt may run
	// the job); the child must stop.
	CodeLeaseLost = "lease_lost"
	// CodeInvalid: the request is malformed or names something invalid.
	CodeInvalid = "invalid"
	// CodeNotFound: the awaited job does not exist.
	CodeNotFound = "not_found"
	// CodeTaskFailed and CodeTaskCancelled: the awaited job ended without
	// a result.
	CodeTaskFailed    = "task_failed"
	CodeTaskCancelled = "task_cancelled"
	// CodeSuspended: the attempt is suspending after a sleep; nothing more
	// is applied.
	CodeSuspended = "suspended"
	// CodeCancelled: the attempt is ending (cancelled, timed out, shut
	// down).
	CodeCancelled = "cancelled"
	// CodeFailed: the request failed otherwise (the store did not answer,
	// say); it may succeed on a later attempt.
	CodeFailed = "failed"
)

// Request is one line a child writes: a JSON object with the fields its
// operation uses. ID is the child's own number for matching the response.
type Request struct {
	ID      uint64          `json:"id"`
	Op      string          `json:"op"`
	Name    string          `json:"name,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Until   string          `json:"until,omitempty"`
	DelayMS int64           `json:"delay_ms,omitempty"`
	Job     string          `json:"job,omitempty"`
}

// Response is one line the worker writes for each request, with the
// request's ID (0 when the line could not be read as a request).
type Response struct {
	ID        uint64          `json:"id"`
	OK        bool            `json:"ok"`
	Found     bool            `json:"found,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Done      bool            `json:"done,omitempty"`
	Suspend   bool            `json:"suspend,omitempty"`
	Until     string          `json:"until,omitempty"`
	ExpiresAt string          `json:"expires_at,omitempty"`
	Error     *Error          `json:"error,omitempty"`
}

// Error is a refused request: a code (the Code constants), a message for
// people, and whether retrying the task cannot help.
type Error struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Permanent bool   `json:"permanent,omitempty"`
}

// Error implements error.
func (e *Error) Error() string { return "boson bridge: " + e.Code + ": " + e.Message }

// Unwrap maps the code to the core sentinel it stands for, so that
// errors.Is(err, core.ErrLeaseLost) holds for CodeLeaseLost.
func (e *Error) Unwrap() error {
	switch e.Code {
	case CodeLeaseLost:
		return core.ErrLeaseLost
	case CodeInvalid:
		return core.ErrInvalidArgument
	case CodeNotFound:
		return core.ErrNotFound
	case CodeSuspended, CodeCancelled:
		return core.ErrInvalidState
	case CodeTaskFailed:
		return ErrTaskFailed
	case CodeTaskCancelled:
		return ErrTaskCancelled
	}
	return nil
}

// Errors of the child side.
var (
	// ErrTaskFailed and ErrTaskCancelled: an awaited job ended without a
	// result.
	ErrTaskFailed    = errors.New("boson bridge: awaited task failed")
	ErrTaskCancelled = errors.New("boson bridge: awaited task cancelled")
	// ErrSuspended: a sleep has not finished; the child must exit (Run
	// exits 0) and the attempt releases its claim until the wake time.
	ErrSuspended = errors.New("boson bridge: the task is sleeping; exit now")
	// ErrNoBridge: the process was not started with a bridge (EnvSocket
	// is unset). It wraps core.ErrInvalidState.
	ErrNoBridge = fmt.Errorf("%w: no executor bridge: %s is not set (set CommandExecutor.Bridge)", core.ErrInvalidState, EnvSocket)
)

// ParseRequest reads one line as a request and checks it: a known
// operation with the fields it needs, valid names, JSON values. It never
// panics; a refusal wraps core.ErrInvalidArgument and says what is wrong.
func ParseRequest(line []byte) (Request, error) {
	var r Request
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return r, invalid("empty line")
	}
	if len(line) > MaxLine {
		return r, invalid("line of %d bytes is longer than %d", len(line), MaxLine)
	}
	if line[0] != '{' {
		return r, invalid("a request is a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, invalid("not a request: %v", err)
	}
	if dec.More() {
		return Request{}, invalid("more than one JSON value on the line")
	}
	return r, r.Validate()
}

// Validate checks that r is a well-formed request of a known operation.
func (r Request) Validate() error {
	switch r.Op {
	case OpStepGet, OpStepSave:
		if err := validName("step", r.Name); err != nil {
			return invalid("%s: %v", r.Op, err)
		}
		if r.Op == OpStepSave && (len(r.Value) == 0 || !json.Valid(r.Value)) {
			return invalid("step.save: value must be a JSON value")
		}
		if r.Op == OpStepGet && len(r.Value) > 0 {
			return invalid("step.get takes no value")
		}
	case OpSleep:
		if err := validName("sleep", r.Name); err != nil {
			return invalid("sleep: %v", err)
		}
		switch {
		case r.Until != "" && r.DelayMS != 0:
			return invalid("sleep: give until or delay_ms, not both")
		case r.Until != "":
			if _, err := time.Parse(time.RFC3339Nano, r.Until); err != nil {
				return invalid("sleep: until %q is not an RFC 3339 time", r.Until)
			}
		case r.DelayMS < 0 || r.DelayMS > int64(100*365*24*time.Hour/time.Millisecond):
			return invalid("sleep: delay_ms %d must be 0 to 100 years", r.DelayMS)
		}
	case OpAwait:
		if err := validName("await", r.Job); err != nil {
			return invalid("await: job %q is not a job id: %v", r.Job, err)
		}
	case OpHeartbeat:
	case "":
		return invalid("op is missing")
	default:
		return invalid("unknown op %q", r.Op)
	}
	return nil
}

// validName checks a step or sleep name, or an awaited job id, as the
// checkpoint name it becomes ("step-<name>", ...).
func validName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("the %s name must not be empty", kind)
	}
	return core.ValidateName(kind, kind+"-"+name)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: bridge request: %s", core.ErrInvalidArgument, fmt.Sprintf(format, args...))
}
