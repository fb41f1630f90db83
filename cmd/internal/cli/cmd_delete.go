package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/boson-go/boson/core"
)

type deleteFlags struct {
	force, yes, noProgress bool
	batch                  int
}

func init() {
	register(&command{
		name:    "delete",
		args:    "JOB_ID...",
		summary: "delete jobs with their runs and checkpoints",
		help: `Deletes each job with its runs and checkpoints and releases its idempotency
key. A running job is refused (exit 4) unless --force, which cancels it and
deletes it in one step: its worker's later writes are refused. An unknown id
exits 3; a store that cannot delete exits 6. With several ids every one is
tried and the exit code is that of the first failure.`,
		flags: func(fs *flag.FlagSet, c *call) {
			f := &deleteFlags{}
			c.opts = f
			fs.BoolVar(&f.force, "force", false, "also cancel and delete running jobs")
		},
		run: func(ctx context.Context, c *call) error {
			force := c.opts.(*deleteFlags).force
			if err := c.needArgs(1, "job id"); err != nil {
				return err
			}
			del, _, err := openCapability[core.JobDeleter](ctx, c, "job deletion")
			if err != nil {
				return err
			}
			return eachJob(ctx, c, "deleted", func(ctx context.Context, _ core.QueueBackend, id string) (core.Job, error) {
				return core.Job{}, del.DeleteJob(ctx, id, force)
			})
		},
	})
	register(&command{
		name:    "delete-queue",
		args:    "QUEUE --yes",
		summary: "delete a queue: every job in it, then its config",
		help: `Deletes every job of the queue in any state (running ones are cancelled and
deleted at once) with their runs and checkpoints, then the queue's stored
config and paused flag, in steps of --batch jobs until none is left; a
progress line goes to stderr. Task configs are kept. Without --yes it only
says how many jobs it would delete and exits 2. A store that cannot delete
exits 6.`,
		flags: func(fs *flag.FlagSet, c *call) {
			f := &deleteFlags{}
			c.opts = f
			fs.BoolVar(&f.yes, "yes", false, "really delete the queue")
			fs.BoolVar(&f.noProgress, "no-progress", false, "print no progress line on stderr")
			fs.IntVar(&f.batch, "batch", defaultBulkBatch, "jobs per step, at most the store's batch limit")
		},
		run: runDeleteQueue,
	})
}

// deleteQueueOut is the JSON shape of delete-queue.
type deleteQueueOut struct {
	Queue   string `json:"queue"`
	Deleted int64  `json:"deleted"`
	Done    bool   `json:"done"`
	Error   string `json:"error,omitempty"`
}

func runDeleteQueue(ctx context.Context, c *call) error {
	f := c.opts.(*deleteFlags)
	if len(c.args) != 1 {
		return usagef("delete-queue takes one queue name")
	}
	queue := c.args[0]
	req := core.DeleteQueueRequest{Queue: queue, Limit: f.batch}
	if err := core.ValidateDeleteQueue(req, core.DefaultLimits); err != nil {
		return err
	}
	ctx, cancel := c.withExplicitTimeout(ctx)
	defer cancel()
	del, st, err := openCapability[core.JobDeleter](ctx, c, "queue deletion")
	if err != nil {
		return err
	}
	counts, err := st.Backend.CountJobs(ctx, core.JobFilter{Queue: queue})
	if err != nil {
		return err
	}
	var total int64
	for _, n := range counts {
		total += n
	}
	if !f.yes {
		return usagef("delete-queue would delete queue %q with its %d jobs; pass --yes to do it", queue, total)
	}
	out := deleteQueueOut{Queue: queue}
	p := c.progress(!f.noProgress)
	for !out.Done {
		res, err := del.DeleteQueue(ctx, req)
		out.Deleted += int64(res.Deleted)
		out.Done = res.Done
		if err != nil {
			p.end()
			out.Error = err.Error()
			if c.jsonOut {
				_ = c.printJSON(out)
			}
			return fmt.Errorf("after deleting %d jobs: %w", out.Deleted, err)
		}
		p.line(out.Done, "delete-queue %s: %d of about %d jobs deleted", queue, out.Deleted, max(total, out.Deleted))
	}
	p.end()
	if c.jsonOut {
		return c.printJSON(out)
	}
	c.printf("deleted queue %s (%d jobs)\n", queue, out.Deleted)
	return nil
}
