package boson

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/runtime/bridge"
)

// PermanentExitCode is the exit status with which a [CommandExecutor]
// subprocess says its failure is permanent (EX_DATAERR of sysexits.h).
const PermanentExitCode = 65

// CommandExecutor runs each attempt in a fresh subprocess: the job's
// payload on standard input, the result read from standard output. Exit
// status 0 completes the attempt, [PermanentExitCode] fails the job for
// good, anything else fails the attempt (and it is retried). When the
// attempt's context is cancelled (lease lost, job cancelled, shutdown) the
// process is killed.
//
// The process sees the attempt in its environment: BOSON_JOB_ID,
// BOSON_TASK, BOSON_QUEUE, BOSON_ATTEMPT, BOSON_WORKER_ID, BOSON_TOKEN
// (the fencing token), BOSON_RUN_ID and one BOSON_HEADER_<key> per
// header.
//
// With Bridge set the process also gets the executor bridge: a Unix
// socket, named by BOSON_BRIDGE_SOCKET, on which it asks the worker for
// durable steps, sleeps, awaits and heartbeats in JSON lines (package
// runtime/bridge is the protocol and the child's side in Go). The worker
// applies each request with the attempt's own lease, so a process whose
// lease was lost is refused (bridge.CodeLeaseLost, core.ErrLeaseLost).
// Once a sleep suspended the task the attempt ends suspended when the
// process exits, whatever its status, and the task runs again from the
// start at the wake time.
type CommandExecutor struct {
	// Path is the program to run; Args are its arguments (without the
	// program name).
	Path string
	Args []string
	// Env is added to the worker's environment.
	Env []string
	// Dir is the working directory; empty means the worker's.
	Dir string
	// WaitDelay bounds how long to wait for the process's output after it
	// was killed; zero means one second.
	WaitDelay time.Duration
	// Bridge offers the process the executor bridge (see above); it needs
	// an attempt run by a worker.
	Bridge bool
	// BridgeDir is the directory in which each attempt's private socket
	// directory is made (a short path: a socket's path is limited to about
	// 100 bytes; a directory shared with a container, say); empty means
	// the system's temporary directory.
	BridgeDir string
}

// Execute implements [Executor].
func (c CommandExecutor) Execute(ctx context.Context, ex *Execution) ([]byte, error) {
	if c.Path == "" {
		return nil, Permanent(errors.New("boson: command executor without a path"))
	}
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = time.Second
	}
	j := ex.Job
	cmd.Env = append(append(os.Environ(), c.Env...),
		"BOSON_JOB_ID="+j.ID,
		"BOSON_TASK="+j.Task,
		"BOSON_QUEUE="+j.Queue,
		"BOSON_ATTEMPT="+strconv.Itoa(j.Attempt),
		"BOSON_WORKER_ID="+ex.WorkerID,
		"BOSON_TOKEN="+strconv.FormatInt(j.Lease.Token, 10),
		"BOSON_RUN_ID="+core.RunID(j.ID, j.Lease.Token),
	)
	for k, v := range j.Headers {
		cmd.Env = append(cmd.Env, "BOSON_HEADER_"+k+"="+v)
	}
	cmd.Stdin = bytes.NewReader(j.Payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 8 << 10}
	var br *bridgeServer
	if c.Bridge {
		a, err := attemptFrom(ctx)
		if err != nil {
			return nil, Permanent(fmt.Errorf("boson: %s: the executor bridge: %w", c.Path, err))
		}
		if br, err = startBridge(ctx, a, c.BridgeDir); err != nil {
			return nil, fmt.Errorf("boson: %s: start the executor bridge: %w", c.Path, err)
		}
		defer br.close()
		cmd.Env = append(cmd.Env, bridge.EnvSocket+"="+br.path)
	}
	err := cmd.Run()
	if br != nil {
		br.close()
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	if br != nil {
		if susp := br.suspended(); susp != nil {
			return nil, susp
		}
	}
	if err != nil {
		msg := fmt.Errorf("boson: %s: %w: %s", c.Path, err, bytes.TrimSpace(stderr.Bytes()))
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && exitErr.ExitCode() == PermanentExitCode {
			return nil, Permanent(msg)
		}
		return nil, msg
	}
	return bytes.TrimSpace(stdout.Bytes()), nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}
