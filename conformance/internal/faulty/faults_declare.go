package faulty

import (
	"context"

	"github.com/boson-go/boson/core"
)

func init() {
	register(Fault{
		Name:     "declare-overwrites-conflict",
		What:     "CreateQueue on a queue declared with another config stores the new one instead of reporting the conflict",
		CaughtBy: []string{"Declare/Conflict", "Declare/RaceDifferent", "Declare/PutConfigKeepsDeclared"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return declareOverwrites{base{b}} },
	})
	register(Fault{
		Name:     "declare-always-created",
		What:     "CreateQueue reports created on every call, not only the one that declared the queue",
		CaughtBy: []string{"Declare/RepeatEqual", "Declare/RaceEqual"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return declareAlwaysCreated{base{b}} },
	})
	register(Fault{
		Name:     "put-config-declares",
		What:     "PutQueueConfig declares the queue it stores a config for",
		CaughtBy: []string{"Declare/PutConfigDoesNotDeclare", "Declare/OtherQueues"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return putConfigDeclares{base{b}} },
	})
	register(Fault{
		Name:     "delete-queue-keeps-declaration",
		What:     "DeleteQueue reports done but the queue stays declared",
		CaughtBy: []string{"Declare/DeleteQueueUndeclares"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return deleteKeepsDeclaration{base{b}} },
	})
	register(Fault{
		Name:     "queue-declared-ignores-name",
		What:     "QueueDeclared reports a queue declared when any queue is",
		CaughtBy: []string{"Declare/OtherQueues"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return declaredAnyQueue{base{b}} },
	})
	register(Fault{
		Name:     "declare-resumes",
		What:     "CreateQueue declaring a paused queue resumes it",
		CaughtBy: []string{"Declare/KeepsPause"},
		wrap:     func(b core.QueueBackend) core.QueueBackend { return declareResumes{base{b}} },
	})
}

// declareOverwrites replaces a conflicting declared config.
type declareOverwrites struct{ base }

func (d declareOverwrites) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	stored, created, err := d.base.CreateQueue(ctx, cfg)
	if err != nil && stored.Queue == cfg.Queue {
		cfg.Paused = stored.Paused
		if perr := d.QueueBackend.PutQueueConfig(ctx, cfg); perr != nil {
			return stored, false, perr
		}
		return cfg, false, nil
	}
	return stored, created, err
}

// declareAlwaysCreated reports created on every successful call.
type declareAlwaysCreated struct{ base }

func (d declareAlwaysCreated) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	stored, _, err := d.base.CreateQueue(ctx, cfg)
	return stored, err == nil, err
}

// putConfigDeclares declares every queue it stores a config for.
type putConfigDeclares struct{ base }

func (p putConfigDeclares) PutQueueConfig(ctx context.Context, cfg core.QueueConfig) error {
	if err := p.QueueBackend.PutQueueConfig(ctx, cfg); err != nil {
		return err
	}
	_, _, err := p.base.CreateQueue(ctx, cfg)
	if err != nil {
		// Declared with another config: store the one asked for.
		return p.QueueBackend.PutQueueConfig(ctx, cfg)
	}
	return nil
}

// deleteKeepsDeclaration declares the queue again once it is deleted.
type deleteKeepsDeclaration struct{ base }

func (d deleteKeepsDeclaration) DeleteQueue(ctx context.Context, r core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	declared, derr := d.base.QueueDeclared(ctx, r.Queue)
	res, err := d.base.DeleteQueue(ctx, r)
	if err == nil && res.Done && derr == nil && declared {
		if _, _, cerr := d.base.CreateQueue(ctx, core.QueueConfig{Queue: r.Queue}); cerr != nil {
			return res, cerr
		}
	}
	return res, err
}

// declareResumes unpauses the queue it declares.
type declareResumes struct{ base }

func (d declareResumes) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	stored, created, err := d.base.CreateQueue(ctx, cfg)
	if err == nil && created && stored.Paused && !cfg.Paused {
		stored.Paused = false
		if perr := d.QueueBackend.PutQueueConfig(ctx, stored); perr != nil {
			return stored, created, perr
		}
	}
	return stored, created, err
}

// declaredAnyQueue answers QueueDeclared for the whole store, not the queue.
type declaredAnyQueue struct{ base }

func (d declaredAnyQueue) QueueDeclared(ctx context.Context, queue string) (bool, error) {
	if err := core.ValidateName("queue", queue); err != nil {
		return false, err
	}
	qs, err := d.QueueBackend.ListQueues(ctx)
	if err != nil {
		return false, err
	}
	for _, q := range qs {
		if q.Declared {
			return true, nil
		}
	}
	return false, nil
}
