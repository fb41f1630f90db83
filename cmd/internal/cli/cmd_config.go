package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boson-go/boson/core"
)

// configFlags are the flags of config: each set flag changes one field of
// the stored config, the others keep theirs.
type configFlags struct {
	maxRunning, maxRunningPerKey, maxStarts, maxStartsPerKey int
	holdSequence                                             bool
	maxInFlight, maxEnqueue, priority, maxAttempts           int
	defaultQueue                                             string
	retention                                                time.Duration
	cleanupLimit                                             int
}

// taskConfigFlags maps the task flags to the config field each sets, by
// the field's name in core's validation errors.
var taskConfigFlags = map[string]string{
	"max-running":                   "max_running",
	"max-running-per-key":           "max_running_per_key",
	"max-starts-per-second":         "max_starts_per_second",
	"max-starts-per-second-per-key": "max_starts_per_second_per_key",
	"hold-sequence-on-failure":      "hold_sequence_on_failure",
	"max-in-flight":                 "max_in_flight",
	"max-enqueue-per-second":        "max_enqueue_per_second",
	"default-queue":                 "queue",
	"priority":                      "priority",
	"max-attempts":                  "max_attempts",
}

// queueConfigFlags maps the queue flags likewise.
var queueConfigFlags = map[string]string{
	"max-running":   "max_running",
	"retention":     "retention_ttl",
	"cleanup-limit": "cleanup_limit",
}

func init() {
	register(&command{
		name:    "config",
		args:    "task TASK | queue QUEUE [setting flags]",
		summary: "show or change a task's or a queue's stored config, flow limits included",
		help: `"boson config task TASK" shows the task's stored config; with setting flags
it changes those fields and keeps the others (a task with no config starts
from none). The flow limits --max-running (running jobs of the task across
every queue), --max-running-per-key (per limit key), --max-starts-per-second,
--max-starts-per-second-per-key and --hold-sequence-on-failure are enforced
at claim by a store with flow control; elsewhere setting one exits 6. The
enqueue limits --max-in-flight and --max-enqueue-per-second and the defaults
--default-queue, --priority and --max-attempts are the task's other fields.
0 removes a limit; a limit lies in [0, 1000000].

"boson config queue QUEUE" shows the queue's stored settings; --max-running
(a flow limit: running jobs of the queue), --retention and --cleanup-limit
change them, keeping whether it is paused ("boson pause" and "boson resume"
change that).

An invalid value exits 2 and changes nothing; "boson stats" shows running
jobs against the limits.`,
		flags: func(fs *flag.FlagSet, c *call) {
			f := &configFlags{}
			c.opts = f
			fs.IntVar(&f.maxRunning, "max-running", 0, "cap on running jobs (task: across every queue; queue: of the queue), 0 for none")
			fs.IntVar(&f.maxRunningPerKey, "max-running-per-key", 0, "task: cap on running jobs per limit key, 0 for none")
			fs.IntVar(&f.maxStarts, "max-starts-per-second", 0, "task: cap on claims per second, 0 for none")
			fs.IntVar(&f.maxStartsPerKey, "max-starts-per-second-per-key", 0, "task: cap on claims per second per limit key, 0 for none")
			fs.BoolVar(&f.holdSequence, "hold-sequence-on-failure", false, "task: a failed job holds its sequence until retried or deleted")
			fs.IntVar(&f.maxInFlight, "max-in-flight", 0, "task: cap on queued, running and sleeping jobs at enqueue, 0 for none")
			fs.IntVar(&f.maxEnqueue, "max-enqueue-per-second", 0, "task: cap on enqueues per second, 0 for none")
			fs.StringVar(&f.defaultQueue, "default-queue", "", "task: the `queue` of a spawn that names none")
			fs.IntVar(&f.priority, "priority", 0, "task: the default priority")
			fs.IntVar(&f.maxAttempts, "max-attempts", 0, "task: the default attempt budget, 0 for the runtime's")
			fs.DurationVar(&f.retention, "retention", 0, "queue: keep terminal jobs this `duration`, 0 for the runtime default")
			fs.IntVar(&f.cleanupLimit, "cleanup-limit", 0, "queue: deletions per cleanup pass, 0 for the runtime default")
		},
		run: runConfig,
	})
}

// setFlags returns the flags given on the command line, by name.
func (c *call) setFlags() map[string]bool {
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// configError turns a validation error of core into one that names the
// flag (exit 2 still, through core.ErrInvalidArgument).
func configError(err error, flags map[string]string) error {
	var ve *core.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	for name, field := range flags {
		if field == ve.Field {
			return fmt.Errorf("%w: --%s: %s", core.ErrInvalidArgument, name, ve.Reason)
		}
	}
	return err
}

func runConfig(ctx context.Context, c *call) error {
	if len(c.args) != 2 {
		return usagef("config takes task TASK or queue QUEUE")
	}
	kind, name := c.args[0], c.args[1]
	set := c.setFlags()
	switch kind {
	case "task":
		if err := core.ValidateName("task", name); err != nil {
			return err
		}
		if err := onlyFlags(set, taskConfigFlags, "task"); err != nil {
			return err
		}
		return configTask(ctx, c, name, set)
	case "queue":
		if err := core.ValidateName("queue", name); err != nil {
			return err
		}
		if err := onlyFlags(set, queueConfigFlags, "queue"); err != nil {
			return err
		}
		return configQueue(ctx, c, name, set)
	}
	return usagef("unknown config kind %q; want task or queue", kind)
}

// onlyFlags refuses setting flags that do not apply to kind.
func onlyFlags(set map[string]bool, allowed map[string]string, kind string) error {
	for name := range set {
		if _, ok := allowed[name]; ok {
			continue
		}
		if _, ok := taskConfigFlags[name]; ok {
			return usagef("--%s does not apply to a %s", name, kind)
		}
		if _, ok := queueConfigFlags[name]; ok {
			return usagef("--%s does not apply to a %s", name, kind)
		}
	}
	return nil
}

// anySet reports whether a setting flag of m was given.
func anySet(set map[string]bool, m map[string]string) bool {
	for name := range m {
		if set[name] {
			return true
		}
	}
	return false
}

func configTask(ctx context.Context, c *call, task string, set map[string]bool) error {
	f := c.opts.(*configFlags)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	cfg, err := st.Backend.GetTaskConfig(ctx, task)
	switch {
	case errors.Is(err, core.ErrNotFound) && anySet(set, taskConfigFlags):
		cfg = core.TaskConfig{}
	case err != nil:
		return err
	}
	cfg.Task = task
	if anySet(set, taskConfigFlags) {
		for name, apply := range map[string]func(){
			"max-running":                   func() { cfg.MaxRunning = f.maxRunning },
			"max-running-per-key":           func() { cfg.MaxRunningPerKey = f.maxRunningPerKey },
			"max-starts-per-second":         func() { cfg.MaxStartsPerSecond = f.maxStarts },
			"max-starts-per-second-per-key": func() { cfg.MaxStartsPerSecondPerKey = f.maxStartsPerKey },
			"hold-sequence-on-failure":      func() { cfg.HoldSequenceOnFailure = f.holdSequence },
			"max-in-flight":                 func() { cfg.MaxInFlight = f.maxInFlight },
			"max-enqueue-per-second":        func() { cfg.MaxEnqueuePerSecond = f.maxEnqueue },
			"default-queue":                 func() { cfg.Queue = f.defaultQueue },
			"priority":                      func() { cfg.Priority = f.priority },
			"max-attempts":                  func() { cfg.MaxAttempts = f.maxAttempts },
		} {
			if set[name] {
				apply()
			}
		}
		if err := core.ValidateTaskConfig(cfg); err != nil {
			return configError(err, taskConfigFlags)
		}
		if cfg.UsesFlowControl() {
			if _, err := capability[core.FlowController](st, "flow control, which the flow limits need"); err != nil {
				return err
			}
		}
		if err := st.Backend.PutTaskConfig(ctx, cfg); err != nil {
			return configError(err, taskConfigFlags)
		}
	}
	if c.jsonOut {
		return c.printJSON(cfg)
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "task:\t%s\n", cfg.Task)
	for _, r := range []struct {
		k string
		v int
	}{
		{"max running", cfg.MaxRunning}, {"max running per key", cfg.MaxRunningPerKey},
		{"max starts per second", cfg.MaxStartsPerSecond}, {"max starts per second per key", cfg.MaxStartsPerSecondPerKey},
		{"max in flight", cfg.MaxInFlight}, {"max enqueue per second", cfg.MaxEnqueuePerSecond},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", r.k, limitText(r.v))
	}
	fmt.Fprintf(tw, "hold sequence on failure:\t%s\n", yesNo(cfg.HoldSequenceOnFailure))
	if cfg.Queue != "" {
		fmt.Fprintf(tw, "default queue:\t%s\n", cfg.Queue)
	}
	if cfg.Priority != 0 {
		fmt.Fprintf(tw, "default priority:\t%d\n", cfg.Priority)
	}
	if cfg.MaxAttempts != 0 {
		fmt.Fprintf(tw, "default max attempts:\t%d\n", cfg.MaxAttempts)
	}
	if !cfg.Retry.IsZero() {
		fmt.Fprintf(tw, "retry:\tinitial %s, factor %g, max %s, jitter %g\n", cfg.Retry.Initial, cfg.Retry.Factor, cfg.Retry.Max, cfg.Retry.Jitter)
	}
	return tw.Flush()
}

func configQueue(ctx context.Context, c *call, queue string, set map[string]bool) error {
	f := c.opts.(*configFlags)
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	cfg, err := st.Backend.GetQueueConfig(ctx, queue)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		return err
	}
	cfg.Queue = queue
	if anySet(set, queueConfigFlags) {
		if set["max-running"] {
			cfg.MaxRunning = f.maxRunning
		}
		if set["retention"] {
			cfg.RetentionTTL = f.retention
		}
		if set["cleanup-limit"] {
			cfg.CleanupLimit = f.cleanupLimit
		}
		if err := core.ValidateQueueConfig(cfg); err != nil {
			return configError(err, queueConfigFlags)
		}
		if cfg.UsesFlowControl() {
			if _, err := capability[core.FlowController](st, "flow control, which --max-running needs"); err != nil {
				return err
			}
		}
		if err := st.Backend.PutQueueConfig(ctx, cfg); err != nil {
			return configError(err, queueConfigFlags)
		}
	}
	if c.jsonOut {
		return c.printJSON(cfg)
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "queue:\t%s\n", cfg.Queue)
	fmt.Fprintf(tw, "paused:\t%s\n", yesNo(cfg.Paused))
	fmt.Fprintf(tw, "max running:\t%s\n", limitText(cfg.MaxRunning))
	fmt.Fprintf(tw, "retention:\t%s\n", orDefault(cfg.RetentionTTL))
	fmt.Fprintf(tw, "cleanup limit:\t%s\n", strings.Replace(limitText(cfg.CleanupLimit), "none", "default", 1))
	return tw.Flush()
}

func limitText(n int) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDefault(d time.Duration) string {
	if d == 0 {
		return "default"
	}
	return d.String()
}
