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
// (the fencing token) and one BOSON_HEADER_<key> per header.
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
	)
	for k, v := range j.Headers {
		cmd.Env = append(cmd.Env, "BOSON_HEADER_"+k+"="+v)
	}
	cmd.Stdin = bytes.NewReader(j.Payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 8 << 10}
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
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
