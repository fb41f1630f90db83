package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boson-go/boson/core"
)

// PermanentExitCode is the exit status that fails the job for good; it
// equals the runtime's boson.PermanentExitCode (EX_DATAERR).
const PermanentExitCode = 65

// Info describes the attempt, as the worker's CommandExecutor puts it in
// the environment.
type Info struct {
	JobID    string
	Task     string
	Queue    string
	WorkerID string
	Attempt  int
	Token    int64
	RunID    string
	Headers  map[string]string
}

// InfoFromEnv reads the attempt's description from the environment.
func InfoFromEnv() Info {
	in := Info{
		JobID: os.Getenv("BOSON_JOB_ID"), Task: os.Getenv("BOSON_TASK"), Queue: os.Getenv("BOSON_QUEUE"),
		WorkerID: os.Getenv("BOSON_WORKER_ID"), RunID: os.Getenv("BOSON_RUN_ID"),
	}
	in.Attempt, _ = strconv.Atoi(os.Getenv("BOSON_ATTEMPT"))
	in.Token, _ = strconv.ParseInt(os.Getenv("BOSON_TOKEN"), 10, 64)
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "BOSON_HEADER_") {
			if in.Headers == nil {
				in.Headers = map[string]string{}
			}
			in.Headers[strings.TrimPrefix(k, "BOSON_HEADER_")] = v
		}
	}
	return in
}

// Conn is the child's end of the bridge. Its methods are safe for
// concurrent use; requests are answered one at a time, in order.
type Conn struct {
	mu   sync.Mutex
	c    net.Conn
	r    *bufio.Reader
	next uint64
	info Info
}

// Connect dials the bridge named by the environment (EnvSocket); without
// one it returns ErrNoBridge.
func Connect(ctx context.Context) (*Conn, error) {
	path := os.Getenv(EnvSocket)
	if path == "" {
		return nil, ErrNoBridge
	}
	c, err := Dial(ctx, path)
	if err != nil {
		return nil, err
	}
	c.info = InfoFromEnv()
	return c, nil
}

// Dial connects to the bridge listening on the Unix socket at path.
func Dial(ctx context.Context, path string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("boson bridge: connect: %w", err)
	}
	return &Conn{c: nc, r: bufio.NewReaderSize(nc, 64<<10)}, nil
}

// Info returns the attempt's description (from the environment).
func (c *Conn) Info() Info { return c.info }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one request and returns its response; a refusal is returned as
// an *Error (errors.Is maps its code to core's sentinels). The request's
// ID is set by Do. When ctx ends first the connection is closed, since
// the answer can no longer be matched.
func (c *Conn) Do(ctx context.Context, req Request) (Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	req.ID = c.next
	line, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("%w: bridge request: %v", core.ErrInvalidArgument, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := c.c.Write(append(line, '\n')); err != nil {
		return Response{}, c.broken(ctx, err)
	}
	for {
		raw, err := readLine(c.r)
		if err != nil {
			return Response{}, c.broken(ctx, err)
		}
		var resp Response
		if err := json.Unmarshal(raw, &resp); err != nil {
			return Response{}, fmt.Errorf("boson bridge: unreadable response: %v", err)
		}
		if resp.ID != req.ID {
			continue // the answer to a line the worker could not read
		}
		if resp.Error != nil {
			return resp, resp.Error
		}
		return resp, nil
	}
}

// broken reports a failed read or write, closing the connection.
func (c *Conn) broken(ctx context.Context, err error) error {
	_ = c.c.Close()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return fmt.Errorf("boson bridge: connection lost (the attempt may have ended): %w", err)
}

// readLine reads one line of at most MaxLine bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > MaxLine {
			return nil, errors.New("boson bridge: line too long")
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// Step returns the committed value of step name when an earlier attempt
// committed one, without calling fn; otherwise it calls fn, commits its
// value (JSON) and returns the committed value. It shares its checkpoint
// with an in-process boson.NewStep[T](name) of the same task. fn's error
// is returned as is and commits nothing. After the attempt's lease is lost
// it returns an error wrapping core.ErrLeaseLost and does not call fn.
func Step[T any](ctx context.Context, c *Conn, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	resp, err := c.Do(ctx, Request{Op: OpStepGet, Name: name})
	if err != nil {
		return zero, err
	}
	if !resp.Found {
		v, err := fn(ctx)
		if err != nil {
			return zero, err
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return zero, Permanent(fmt.Errorf("%w: step %s: encode: %v", core.ErrInvalidArgument, name, err))
		}
		if resp, err = c.Do(ctx, Request{Op: OpStepSave, Name: name, Value: raw}); err != nil {
			return zero, err
		}
	}
	var v T
	if err := json.Unmarshal(resp.Value, &v); err != nil {
		return zero, Permanent(fmt.Errorf("%w: step %s: decode the committed value: %v", core.ErrInvalidArgument, name, err))
	}
	return v, nil
}

// Sleep durably sleeps for d, measured from the first time the task
// reached sleep name (see boson.SleepFor). It returns nil once the wake
// time has passed; before that it returns ErrSuspended and the child must
// exit (Run does, with status 0): the worker releases the claim and the
// task runs again from the start at the wake time.
func (c *Conn) Sleep(ctx context.Context, name string, d time.Duration) error {
	if d < 0 {
		d = 0
	}
	return c.sleep(ctx, Request{Op: OpSleep, Name: name, DelayMS: (d + time.Millisecond - 1).Milliseconds()})
}

// SleepUntil durably sleeps until t; see Sleep.
func (c *Conn) SleepUntil(ctx context.Context, name string, t time.Time) error {
	return c.sleep(ctx, Request{Op: OpSleep, Name: name, Until: t.UTC().Format(time.RFC3339Nano)})
}

func (c *Conn) sleep(ctx context.Context, req Request) error {
	resp, err := c.Do(ctx, req)
	if err != nil {
		return err
	}
	if resp.Suspend {
		return fmt.Errorf("%w (sleep %s until %s)", ErrSuspended, req.Name, resp.Until)
	}
	return nil
}

// Await waits for the job jobID, which must be in another queue than this
// task's, and returns its result decoded into T. The result is
// checkpointed: a later attempt replays it without waiting. A job that
// ended without a result gives an error wrapping ErrTaskFailed or
// ErrTaskCancelled.
func Await[T any](ctx context.Context, c *Conn, jobID string) (T, error) {
	var v T
	resp, err := c.Do(ctx, Request{Op: OpAwait, Job: jobID})
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(resp.Value, &v); err != nil {
		return v, Permanent(fmt.Errorf("%w: await %s: decode the result: %v", core.ErrInvalidArgument, jobID, err))
	}
	return v, nil
}

// Heartbeat renews the attempt's lease at the store now and returns its
// new expiry; after the lease was lost it returns an error wrapping
// core.ErrLeaseLost.
func (c *Conn) Heartbeat(ctx context.Context) (time.Time, error) {
	resp, err := c.Do(ctx, Request{Op: OpHeartbeat})
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, resp.ExpiresAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("boson bridge: heartbeat: expiry %q: %v", resp.ExpiresAt, err)
	}
	return t, nil
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying: Run exits with
// PermanentExitCode and the job fails at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent, or is a
// refusal of the worker that retrying cannot help.
func IsPermanent(err error) bool {
	var p *permanentError
	if errors.As(err, &p) {
		return true
	}
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// Handler computes one attempt in the child: the decoded input in, the
// output (encoded as JSON) or an error out.
type Handler[In, Out any] func(ctx context.Context, c *Conn, in In) (Out, error)

// Main is the child's one call: it runs fn as the attempt (see Run) and
// exits the process with Run's status. SIGTERM and SIGINT cancel fn's
// context.
func Main[In, Out any](fn Handler[In, Out]) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Stdin, os.Stdout, os.Stderr, fn)
	stop()
	os.Exit(code)
}

// Run runs fn as one attempt and returns the exit status for the worker:
// it decodes the input (JSON) from stdin, connects to the bridge, calls
// fn, and writes fn's output as JSON to stdout. It returns 0 when fn
// succeeded or a sleep suspended the task, PermanentExitCode for an
// input that does not decode or an error marked Permanent, and 1 for any
// other error (the attempt is retried), which it writes to stderr.
func Run[In, Out any](ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, fn Handler[In, Out]) int {
	var in In
	raw, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintln(stderr, "boson bridge: read the input:", err)
		return 1
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &in); err != nil {
			fmt.Fprintln(stderr, "boson bridge: the input does not decode:", err)
			return PermanentExitCode
		}
	}
	c, err := Connect(ctx)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return PermanentExitCode
	}
	defer c.Close()
	out, err := fn(ctx, c, in)
	switch {
	case errors.Is(err, ErrSuspended):
		return 0
	case err != nil:
		fmt.Fprintln(stderr, err)
		if IsPermanent(err) {
			return PermanentExitCode
		}
		return 1
	}
	b, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintln(stderr, "boson bridge: encode the output:", err)
		return PermanentExitCode
	}
	if _, err := stdout.Write(b); err != nil {
		fmt.Fprintln(stderr, "boson bridge: write the output:", err)
		return 1
	}
	return 0
}
