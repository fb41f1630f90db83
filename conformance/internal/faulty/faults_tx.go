package faulty

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// Faults of transactional cancel and retry. The wrapped backend has no
// transactions, so these faults give it one: a [Journal] that records each
// CancelTx and RetryTx, decides it on the job as the transaction sees it,
// and applies it with Cancel or Retry at Commit. [WrapJournal] is the
// correct journal, which passes the suite; each fault breaks one rule of
// it. A fault with TxControl set wants the harness to declare TxControl
// and to open transactions with [BeginJournal].

func init() {
	register(Fault{
		Name:      "tx-cancel-ignores-tx",
		What:      "CancelTx cancels at once, outside the caller's transaction",
		CaughtBy:  []string{"TxControl/CancelCommit", "TxControl/CancelRollback", "TxControl/CancelRunningRollback"},
		TxControl: true,
		wrap:      func(b core.QueueBackend) core.QueueBackend { return journaled{base{b}, txFaults{cancelAtOnce: true}} },
	})
	register(Fault{
		Name:      "tx-cancel-keeps-running",
		What:      "a committed CancelTx of a running job is lost: the job runs on under its lease",
		CaughtBy:  []string{"TxControl/CancelRunningCommit"},
		TxControl: true,
		wrap: func(b core.QueueBackend) core.QueueBackend {
			return journaled{base{b}, txFaults{dropRunningCancel: true}}
		},
	})
	register(Fault{
		Name:      "tx-retry-ignores-tx",
		What:      "RetryTx retries at once, outside the caller's transaction",
		CaughtBy:  []string{"TxControl/RetryCommit", "TxControl/RetryRollback"},
		TxControl: true,
		wrap:      func(b core.QueueBackend) core.QueueBackend { return journaled{base{b}, txFaults{retryAtOnce: true}} },
	})
	register(Fault{
		Name:      "tx-retry-spent-final",
		What:      "RetryTx does not grow MaxAttempts: it refuses a failed job whose attempts are spent",
		CaughtBy:  []string{"TxControl/RetrySpentCommit"},
		TxControl: true,
		wrap:      func(b core.QueueBackend) core.QueueBackend { return journaled{base{b}, txFaults{spentFinal: true}} },
	})
	register(Fault{
		Name:      "tx-any-type",
		What:      "CancelTx and RetryTx take a value that is not the store's transaction and act at once",
		CaughtBy:  []string{"TxControl/WrongType"},
		TxControl: true,
		wrap:      func(b core.QueueBackend) core.QueueBackend { return journaled{base{b}, txFaults{anyTx: true}} },
	})
	register(Fault{
		Name:      "tx-refusal-aborts",
		What:      "a refused CancelTx or RetryTx aborts the caller's transaction, so its commit fails",
		CaughtBy:  []string{"TxControl/CancelStates", "TxControl/RetryStates"},
		TxControl: true,
		wrap:      func(b core.QueueBackend) core.QueueBackend { return journaled{base{b}, txFaults{refusalAborts: true}} },
	})
}

// WrapJournal returns b with a correct [core.TxController] on transactions
// from [BeginJournal].
func WrapJournal(b core.QueueBackend) core.QueueBackend { return journaled{base: base{b}} }

// Journal is the transaction type of the journal backends.
type Journal struct {
	mu      sync.Mutex
	ops     []func(ctx context.Context) error
	seen    map[string]core.Job // jobs as the transaction sees them
	ended   bool
	aborted bool
}

// BeginJournal opens a journal transaction and returns it with its commit
// and rollback. Commit applies the recorded calls in order.
func BeginJournal(ctx context.Context) (tx any, commit, rollback func() error) {
	jn := &Journal{seen: map[string]core.Job{}}
	commit = func() error {
		jn.mu.Lock()
		defer jn.mu.Unlock()
		if jn.ended {
			return errors.New("faulty: the journal already ended")
		}
		jn.ended = true
		if jn.aborted {
			return errors.New("faulty: the journal was aborted by a refused call")
		}
		for _, op := range jn.ops {
			if err := op(ctx); err != nil {
				return fmt.Errorf("faulty: applying the journal: %w", err)
			}
		}
		return nil
	}
	rollback = func() error {
		jn.mu.Lock()
		defer jn.mu.Unlock()
		if jn.ended {
			return errors.New("faulty: the journal already ended")
		}
		jn.ended = true
		return nil
	}
	return jn, commit, rollback
}

// txFaults selects the defects of a journaled backend; none is correct.
type txFaults struct {
	cancelAtOnce, dropRunningCancel, retryAtOnce, spentFinal, anyTx, refusalAborts bool
}

type journaled struct {
	base
	f txFaults
}

// journal returns tx as a live journal, or an error wrapping
// core.ErrInvalidArgument.
func journal(tx any) (*Journal, error) {
	jn, ok := tx.(*Journal)
	if !ok || jn == nil {
		return nil, fmt.Errorf("%w: tx is %T, not a *faulty.Journal", core.ErrInvalidArgument, tx)
	}
	return jn, nil
}

// view returns the job as jn sees it, with jn locked by the caller.
func (b journaled) view(ctx context.Context, jn *Journal, id string) (core.Job, error) {
	if jn.ended {
		return core.Job{}, errors.New("faulty: the journal already ended")
	}
	if j, ok := jn.seen[id]; ok {
		return j, nil
	}
	return b.QueueBackend.GetJob(ctx, id)
}

// refuse records a refusal, which aborts the journal under refusalAborts.
func (b journaled) refuse(jn *Journal, err error) (core.Job, error) {
	if b.f.refusalAborts {
		jn.aborted = true
	}
	return core.Job{}, err
}

// CancelTx implements core.TxController.
func (b journaled) CancelTx(ctx context.Context, tx any, id, reason string) (core.Job, error) {
	jn, err := journal(tx)
	if err != nil || b.f.cancelAtOnce {
		if err != nil && !b.f.anyTx {
			return core.Job{}, err
		}
		return b.QueueBackend.Cancel(ctx, id, reason)
	}
	jn.mu.Lock()
	defer jn.mu.Unlock()
	cur, err := b.view(ctx, jn, id)
	if err != nil {
		return b.refuse(jn, err)
	}
	switch cur.State {
	case core.StateCancelled:
		return cur, nil
	case core.StateSucceeded, core.StateFailed:
		return b.refuse(jn, fmt.Errorf("%w: job %s is %s", core.ErrInvalidState, id, cur.State))
	}
	next := cur
	next.State = core.StateCancelled
	next.LastError = reason
	if reason == "" {
		next.LastError = "cancelled"
	}
	jn.seen[id] = next
	if !b.f.dropRunningCancel || cur.State != core.StateRunning {
		inner := b.QueueBackend
		jn.ops = append(jn.ops, func(ctx context.Context) error {
			_, err := inner.Cancel(ctx, id, reason)
			return err
		})
	}
	return next, nil
}

// RetryTx implements core.TxController.
func (b journaled) RetryTx(ctx context.Context, tx any, id string) (core.Job, error) {
	jn, err := journal(tx)
	if err != nil || b.f.retryAtOnce {
		if err != nil && !b.f.anyTx {
			return core.Job{}, err
		}
		return b.QueueBackend.Retry(ctx, id)
	}
	jn.mu.Lock()
	defer jn.mu.Unlock()
	cur, err := b.view(ctx, jn, id)
	if err != nil {
		return b.refuse(jn, err)
	}
	spent := cur.Attempt >= cur.MaxAttempts
	if cur.State != core.StateFailed && cur.State != core.StateCancelled || b.f.spentFinal && spent {
		return b.refuse(jn, fmt.Errorf("%w: job %s is %s with %d of %d attempts", core.ErrInvalidState, id, cur.State, cur.Attempt, cur.MaxAttempts))
	}
	if holder, held := b.keyHolder(ctx, cur); held && holder != id {
		return b.refuse(jn, fmt.Errorf("%w: job %s's key %q is held by job %s", core.ErrIdempotencyConflict, id, cur.IdempotencyKey, holder))
	}
	next := cur
	next.State = core.StateQueued
	next.FinishedAt = time.Time{}
	if spent {
		next.MaxAttempts = cur.Attempt + 1
	}
	jn.seen[id] = next
	inner := b.QueueBackend
	jn.ops = append(jn.ops, func(ctx context.Context) error {
		_, err := inner.Retry(ctx, id)
		return err
	})
	return next, nil
}

// keyHolder returns the job that holds j's while-active key now, as the
// wrapped backend's FindByIdempotencyKey tells: a retry of j must retake
// that key.
func (b journaled) keyHolder(ctx context.Context, j core.Job) (string, bool) {
	js, ok := b.QueueBackend.(core.JobSearcher)
	if !ok || j.Unique != core.UniqueWhileActive || j.IdempotencyKey == "" {
		return "", false
	}
	h, err := js.FindByIdempotencyKey(ctx, j.Queue, j.IdempotencyKey)
	if err != nil {
		return "", false
	}
	return h.ID, true
}
