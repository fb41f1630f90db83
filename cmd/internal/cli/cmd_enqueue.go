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

	// The flow fields: they need a store with flow control.
	limitKey, sequenceKey, unique string
	uniquePeriod                  time.Duration
	uniqueArgs                    bool
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
request prints that job ("reused"); a different request exits 4.

Flow control (a store that enforces it; elsewhere these exit 6 and store
nothing): --limit-key puts the job under the task's per-key limits,
--sequence-key runs it after the earlier jobs of its sequence, --unique says
how long the idempotency key holds (until_retention, the default,
while_active, or by_period with --unique-period), and --unique-args derives
the key from the task and the canonical JSON of the payload instead of
--key.`,
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
			fs.StringVar(&enq.limitKey, "limit-key", "", "limit `key` (a tenant, say) for the task's per-key limits")
			fs.StringVar(&enq.sequenceKey, "sequence-key", "", "sequence `key`: run after the earlier jobs of the sequence, one at a time")
			fs.StringVar(&enq.unique, "unique", "", "how long the idempotency key holds: until_retention, while_active or by_period")
			fs.DurationVar(&enq.uniquePeriod, "unique-period", 0, "one job per key per window of this `duration` (implies --unique by_period)")
			fs.BoolVar(&enq.uniqueArgs, "unique-args", false, "derive the idempotency key from the task and the payload's canonical JSON")
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
	flow, err := f.flowOptions(set)
	if err != nil {
		return err
	}
	opts = append(opts, flow...)
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

// flowOptions turns the flow flags into spawn options. It checks what only
// the command line can get wrong (an unknown mode, flags that contradict
// each other); the runtime and the store check the keys and the period.
func (f *enqueueFlags) flowOptions(set map[string]bool) ([]boson.SpawnOption, error) {
	var opts []boson.SpawnOption
	if set["limit-key"] {
		opts = append(opts, boson.WithLimitKey(f.limitKey))
	}
	if set["sequence-key"] {
		opts = append(opts, boson.WithSequenceKey(f.sequenceKey))
	}
	mode := core.UniqueMode(f.unique)
	if f.unique == "until_retention" {
		mode = core.UniqueUntilRetention
	}
	if !mode.Valid() {
		return nil, usagef("--unique %q: want until_retention, while_active or by_period", f.unique)
	}
	switch {
	case set["unique-period"]:
		if set["unique"] && mode != core.UniqueByPeriod {
			return nil, usagef("--unique-period needs --unique by_period, not %s", f.unique)
		}
		opts = append(opts, boson.WithUniquePeriod(f.uniquePeriod))
	case mode == core.UniqueByPeriod:
		return nil, usagef("--unique by_period needs --unique-period")
	case set["unique"]:
		opts = append(opts, boson.WithUnique(mode))
	}
	if f.uniqueArgs {
		if f.key != "" {
			return nil, usagef("give --key or --unique-args, not both")
		}
		opts = append(opts, boson.WithUniqueArgs())
	} else if (set["unique"] || set["unique-period"]) && mode != core.UniqueUntilRetention && f.key == "" {
		return nil, usagef("--unique %s needs --key or --unique-args", mode)
	}
	return opts, nil
}
