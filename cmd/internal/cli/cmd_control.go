package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/boson-go/boson/core"
)

func init() {
	register(&command{
		name:    "cancel",
		args:    "JOB_ID...",
		summary: "cancel queued, sleeping or running jobs",
		help: `Cancels each job: a queued or sleeping job will not run, a running job's
lease is superseded at once (its worker's later writes are refused).
Cancelling a cancelled job succeeds and changes nothing; a succeeded or failed
job exits 4; an unknown id exits 3. With several ids every one is tried and
the exit code is that of the first failure.`,
		flags: func(fs *flag.FlagSet, c *call) {
			reason := new(string)
			c.opts = reason
			fs.StringVar(reason, "reason", "", "why, recorded as the job's last error (default \"cancelled\")")
		},
		run: func(ctx context.Context, c *call) error {
			reason := *c.opts.(*string)
			return eachJob(ctx, c, "cancelled", func(ctx context.Context, b core.QueueBackend, id string) (core.Job, error) {
				return b.Cancel(ctx, id, reason)
			})
		},
	})
	register(&command{
		name:    "retry",
		args:    "JOB_ID...",
		summary: "queue failed or cancelled jobs again",
		help: `Queues each failed or cancelled job again, due now. A job whose attempts are
spent gets one more. Any other state exits 4; an unknown id exits 3.`,
		run: func(ctx context.Context, c *call) error {
			return eachJob(ctx, c, "queued again", func(ctx context.Context, b core.QueueBackend, id string) (core.Job, error) {
				return b.Retry(ctx, id)
			})
		},
	})
	register(&command{
		name:    "pause",
		args:    "QUEUE...",
		summary: "stop handing out a queue's jobs (persists; enqueue still works)",
		help: `Pauses each queue: workers claim nothing from it until it is resumed. The
pause is stored with the queue's config, so it survives restarts.`,
		run: func(ctx context.Context, c *call) error { return setPaused(ctx, c, true) },
	})
	register(&command{
		name:    "resume",
		args:    "QUEUE...",
		summary: "hand out a paused queue's jobs again",
		help:    `Resumes each paused queue.`,
		run:     func(ctx context.Context, c *call) error { return setPaused(ctx, c, false) },
	})
}

// jobOutcome is the JSON shape of one id's outcome.
type jobOutcome struct {
	ID string `json:"id"`
	// Job is the job after the operation; absent after a delete.
	Job   *core.Job `json:"job,omitempty"`
	Error string    `json:"error,omitempty"`
}

func eachJob(ctx context.Context, c *call, verb string, op func(context.Context, core.QueueBackend, string) (core.Job, error)) error {
	if err := c.needArgs(1, "job id"); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	var first error
	var outs []jobOutcome
	for _, id := range c.args {
		j, err := op(ctx, st.Backend, id)
		o := jobOutcome{ID: id}
		if err != nil {
			o.Error = err.Error()
			if first == nil {
				first = fmt.Errorf("%s: %w", id, err)
			}
			if !c.jsonOut && len(c.args) > 1 {
				fmt.Fprintf(c.env.Stderr, "boson: %s: %v\n", id, err)
			}
		} else {
			// An operation that leaves no job (delete) returns the zero Job.
			if j.ID != "" {
				o.Job = &j
			}
			switch {
			case c.jsonOut:
			case j.ID == "":
				c.printf("%s %s\n", verb, id)
			default:
				c.printf("%s %s (state %s)\n", verb, id, j.State)
			}
		}
		outs = append(outs, o)
	}
	if c.jsonOut {
		if err := c.printJSON(outs); err != nil {
			return err
		}
	}
	if first != nil && len(c.args) > 1 {
		// Details were printed per id; keep the exit code.
		return quietError{first}
	}
	return first
}

// quietError carries an exit code whose message was already printed.
type quietError struct{ err error }

func (e quietError) Error() string { return e.err.Error() }
func (e quietError) Unwrap() error { return e.err }

func setPaused(ctx context.Context, c *call, paused bool) error {
	if err := c.needArgs(1, "queue name"); err != nil {
		return err
	}
	for _, q := range c.args {
		if err := core.ValidateName("queue", q); err != nil {
			return err
		}
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	var cfgs []core.QueueConfig
	for _, q := range c.args {
		cfg, err := st.Backend.GetQueueConfig(ctx, q)
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			return err
		}
		cfg.Queue, cfg.Paused = q, paused
		if err := st.Backend.PutQueueConfig(ctx, cfg); err != nil {
			return err
		}
		cfgs = append(cfgs, cfg)
		if !c.jsonOut {
			if paused {
				c.printf("paused %s\n", q)
			} else {
				c.printf("resumed %s\n", q)
			}
		}
	}
	if c.jsonOut {
		return c.printJSON(cfgs)
	}
	return nil
}
