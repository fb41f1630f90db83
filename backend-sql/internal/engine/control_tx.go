package engine

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

// CancelIn is Cancel inside q, a transaction that the caller owns. It
// works under a savepoint, so a refused or failed cancel leaves the
// caller's transaction as it was. The job's row stays locked, where the
// store locks rows, until the caller's transaction ends; the store's
// notification goes out when it commits. Local subscribers are not woken:
// the caller does that where the store cannot notify at commit.
func (e *Engine) CancelIn(ctx context.Context, q Querier, jobID, reason string) (core.Job, error) {
	if err := e.check("cancel"); err != nil {
		return core.Job{}, err
	}
	if !plausibleID(jobID) {
		return core.Job{}, fmt.Errorf("boson/%s: cancel: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	var out core.Job
	err := e.underSavepoint(ctx, q, "boson_cancel", func() error {
		var err error
		out, _, err = e.cancelIn(ctx, q, jobID, reason)
		return err
	})
	if err != nil {
		return core.Job{}, e.wrap("cancel", err)
	}
	return out, nil
}

// RetryIn is Retry inside q, a transaction that the caller owns, with the
// savepoint, locking and notification of [Engine.CancelIn].
func (e *Engine) RetryIn(ctx context.Context, q Querier, jobID string) (core.Job, error) {
	if err := e.check("retry"); err != nil {
		return core.Job{}, err
	}
	if !plausibleID(jobID) {
		return core.Job{}, fmt.Errorf("boson/%s: retry: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	var out core.Job
	err := e.underSavepoint(ctx, q, "boson_retry", func() error {
		var err error
		out, err = e.retryIn(ctx, q, jobID)
		return err
	})
	if err != nil {
		return core.Job{}, e.wrap("retry", err)
	}
	return out, nil
}

// underSavepoint runs fn on q between SAVEPOINT name and its release, and
// rolls back to the savepoint when fn fails, so that the transaction
// around it stays usable and holds nothing of fn's work.
func (e *Engine) underSavepoint(ctx context.Context, q Querier, name string, fn func() error) error {
	if _, err := q.Exec(ctx, "SAVEPOINT "+name); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if err := fn(); err != nil {
		if _, rbErr := q.Exec(ctx, "ROLLBACK TO SAVEPOINT "+name); rbErr != nil {
			return fmt.Errorf("%w (rolling back to the savepoint: %v)", err, rbErr)
		}
		_, _ = q.Exec(ctx, "RELEASE SAVEPOINT "+name)
		return err
	}
	if _, err := q.Exec(ctx, "RELEASE SAVEPOINT "+name); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}
