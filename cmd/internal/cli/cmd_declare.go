package cli

import (
	"context"
	"flag"

	"github.com/boson-go/boson/core"
)

func init() {
	register(&command{
		name:    "create-queue",
		args:    "QUEUE",
		summary: "declare a queue with its config, or check the declared one's",
		help: `Declares the queue with the given settings, so that clients in strict mode
(ClientOptions.StrictQueues) may spawn to it. Running it again with the same
settings succeeds and changes nothing ("already declared"); with other
settings it exits 4 and changes nothing, naming the stored config. A config
stored by pause or resume does not declare a queue; --paused only applies
when this call declares it, and a paused queue stays paused. delete-queue
removes the declaration. A store that cannot declare queues exits 6.`,
		flags: func(fs *flag.FlagSet, c *call) {
			f := &createQueueFlags{}
			c.opts = f
			fs.DurationVar(&f.cfg.RetentionTTL, "retention", 0, "keep terminal jobs this `long` (0: the runtime default)")
			fs.IntVar(&f.cfg.CleanupLimit, "cleanup-limit", 0, "delete at most this many jobs per cleanup pass (0: the runtime default)")
			fs.IntVar(&f.cfg.MaxRunning, "max-running", 0, "cap on the queue's running jobs (0: no limit)")
			fs.BoolVar(&f.cfg.Paused, "paused", false, "declare the queue paused")
		},
		run: runCreateQueue,
	})
}

type createQueueFlags struct{ cfg core.QueueConfig }

// createQueueOut is the JSON shape of create-queue.
type createQueueOut struct {
	Created bool             `json:"created"`
	Config  core.QueueConfig `json:"config"`
}

func runCreateQueue(ctx context.Context, c *call) error {
	f := c.opts.(*createQueueFlags)
	if len(c.args) != 1 {
		return usagef("create-queue takes one queue name")
	}
	cfg := f.cfg
	cfg.Queue = c.args[0]
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	qd, _, err := openCapability[core.QueueDeclarer](ctx, c, "declared queues")
	if err != nil {
		return err
	}
	stored, created, err := qd.CreateQueue(ctx, cfg)
	if err != nil {
		return err
	}
	if c.jsonOut {
		return c.printJSON(createQueueOut{Created: created, Config: stored})
	}
	if created {
		c.printf("declared %s\n", cfg.Queue)
	} else {
		c.printf("already declared %s\n", cfg.Queue)
	}
	return nil
}
