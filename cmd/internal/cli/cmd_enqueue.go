package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

type enqueueFlags struct {
	task, queue, payload, payloadFile, runAt, key, actor string
	priority, maxAttempts                                int
	delay                                                time.Duration
	headers                                              headerFlag
}

// headerFlag collects repeated --header key=value flags.
type headerFlag map[string]string

func (h headerFlag) String() string { return "" }

func (h headerFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("header %q: want key=value", v)
	}
	h[k] = val
	return nil
}

func init() {
	register(&command{
		name:    "enqueue",
		args:    "--task NAME [--payload JSON | --payload-file FILE]",
		summary: "spawn one job",
		help: `Spawns one job of a task, through the runtime's client: the task's stored
config supplies defaults (queue, priority, attempts, retry) for what the flags
leave unset, and its limits apply. The payload must be JSON;
--payload-file - reads it from standard input. Prints the job id, or the job
with --json. An idempotency key that already holds a job with the same
request prints that job ("reused"); a different request exits 4.`,
		flags: func(fs *flag.FlagSet, c *call) {
			enq := &enqueueFlags{headers: headerFlag{}}
			c.opts = enq
			fs.StringVar(&enq.task, "task", "", "task `name` (required)")
			fs.StringVar(&enq.queue, "queue", "", "queue `name` (default: the task config's, else \"default\")")
			fs.StringVar(&enq.payload, "payload", "", "payload `JSON` (default {})")
			fs.StringVar(&enq.payloadFile, "payload-file", "", "read the payload from `file` (- for stdin)")
			fs.IntVar(&enq.priority, "priority", 0, "`priority` from -1000 to 1000; lower runs first")
			fs.IntVar(&enq.maxAttempts, "max-attempts", 0, "attempt `budget` (default 5)")
			fs.DurationVar(&enq.delay, "delay", 0, "run no earlier than this `duration` from now")
			fs.StringVar(&enq.runAt, "run-at", "", "run no earlier than this RFC 3339 `time`")
			fs.StringVar(&enq.key, "key", "", "idempotency `key` within the queue")
			fs.StringVar(&enq.actor, "actor", "", "record who enqueued the job")
			fs.Var(enq.headers, "header", "add a header `key=value` (repeatable)")
		},
		run: runEnqueue,
	})
}

func runEnqueue(ctx context.Context, c *call) error {
	if err := c.noArgs(); err != nil {
		return err
	}
	f := c.opts.(*enqueueFlags)
	if f.task == "" {
		return usagef("--task is required")
	}
	if err := core.ValidateName("task", f.task); err != nil {
		return err
	}
	payload := []byte(f.payload)
	if f.payloadFile != "" {
		if f.payload != "" {
			return usagef("give --payload or --payload-file, not both")
		}
		var err error
		if f.payloadFile == "-" {
			payload, err = io.ReadAll(c.env.Stdin)
		} else {
			payload, err = os.ReadFile(f.payloadFile)
		}
		if err != nil {
			return fmt.Errorf("read payload: %w", err)
		}
	}
	if len(strings.TrimSpace(string(payload))) == 0 {
		payload = []byte("{}")
	}
	if !json.Valid(payload) {
		return usagef("the payload is not valid JSON")
	}
	var opts []boson.SpawnOption
	set := map[string]bool{}
	c.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.queue != "" {
		opts = append(opts, boson.WithQueue(f.queue))
	}
	if set["priority"] {
		opts = append(opts, boson.WithPriority(f.priority))
	}
	if set["max-attempts"] {
		opts = append(opts, boson.WithMaxAttempts(f.maxAttempts))
	}
	if set["delay"] {
		if set["run-at"] {
			return usagef("give --delay or --run-at, not both")
		}
		opts = append(opts, boson.WithDelay(f.delay))
	}
	if f.runAt != "" {
		t, err := time.Parse(time.RFC3339Nano, f.runAt)
		if err != nil {
			return usagef("--run-at: %v", err)
		}
		opts = append(opts, boson.WithRunAt(t))
	}
	if f.key != "" {
		opts = append(opts, boson.WithIdempotencyKey(f.key))
	}
	if f.actor != "" {
		opts = append(opts, boson.WithActor(f.actor))
	}
	if len(f.headers) > 0 {
		opts = append(opts, boson.WithHeaders(f.headers))
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	client, err := boson.NewClient(st.Backend, boson.ClientOptions{})
	if err != nil {
		return err
	}
	task := boson.NewTask[json.RawMessage, json.RawMessage](f.task)
	sp, err := client.SpawnRequests(ctx, task.Request(json.RawMessage(payload), opts...))
	if err != nil {
		return err
	}
	if c.jsonOut {
		return c.printJSON(core.EnqueueResult{Job: sp[0].Job, Reused: sp[0].Reused})
	}
	verb := "enqueued"
	if sp[0].Reused {
		verb = "reused"
	}
	c.printf("%s %s (queue %s, task %s)\n", verb, sp[0].Job.ID, sp[0].Job.Queue, sp[0].Job.Task)
	return nil
}
