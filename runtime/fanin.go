package boson

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
)

// Fan-in checkpoint names: the wait's bound and the winner of an AwaitAny
// are stored under "fanin-<hash>-until" and "fanin-<hash>-won", where the
// hash covers the mode and the awaited job ids in order. Results of
// succeeded children share the "await-<id>" checkpoints of [Await].
const faninPrefix = "fanin-"

// ErrAwaitTimeout: the bound set by [AwaitUntil] or [AwaitTimeout] came
// before an [AwaitAll] or [AwaitAny] was satisfied. It wraps
// [context.DeadlineExceeded].
var ErrAwaitTimeout = fmt.Errorf("boson: fan-in wait timed out: %w", context.DeadlineExceeded)

// AwaitOption configures [AwaitAll] and [AwaitAny].
type AwaitOption func(*awaitConfig)

type awaitConfig struct {
	until          time.Time
	timeout        time.Duration
	timeoutSet     bool
	cancelChildren bool
}

// CancelChildrenOnCancel makes a cancellation of the waiting task while it
// is parked on its children (Cancel, a bulk cancel, or its cancellation
// deadline) cancel, in the same store step, every awaited child that has
// not ended. A cancellation while the task runs (before it parks or after
// it is woken) does not reach the children.
func CancelChildrenOnCancel() AwaitOption {
	return func(c *awaitConfig) { c.cancelChildren = true }
}

// AwaitUntil bounds the wait: when t comes before the wait is satisfied,
// the task is woken and the await returns an error wrapping
// [ErrAwaitTimeout]. The bound recorded the first time the task reached the
// await wins on replay.
func AwaitUntil(t time.Time) AwaitOption {
	return func(c *awaitConfig) { c.until, c.timeout, c.timeoutSet = t, 0, false }
}

// AwaitTimeout bounds the wait to d from the first time the task reached
// the await (recorded, so a replay keeps the same bound); see [AwaitUntil].
// d must be positive.
func AwaitTimeout(d time.Duration) AwaitOption {
	return func(c *awaitConfig) { c.timeout, c.until, c.timeoutSet = d, time.Time{}, true }
}

// awaited is one child of a fan-in, stripped of its result type.
type awaited struct {
	id, queue string
	b         core.QueueBackend
}

func refs[Out any](hs []*Handle[Out]) ([]awaited, error) {
	out := make([]awaited, len(hs))
	for i, h := range hs {
		if h == nil {
			return nil, Permanent(fmt.Errorf("%w: fan-in over a nil handle (index %d)", core.ErrInvalidArgument, i))
		}
		out[i] = awaited{id: h.job.ID, queue: h.job.Queue, b: h.b}
	}
	return out, nil
}

// AwaitAll waits until every task behind hs has ended and returns their
// results in the order of hs. It must be called from a running task; the
// children may live in any queue, the caller's own included, but in the
// caller's backend.
//
// While a child has not ended, AwaitAll returns a [*SuspendError] that the
// handler must return: the worker then parks the task on its children
// through the backend's [core.Awaiter] and releases its claim, so the
// waiting task holds no worker slot and no lease, and nothing polls. The
// store wakes it when the last child ends; the task then runs again from
// the start, replays its steps, and AwaitAll reads the children again. A
// child that went back to work meanwhile (a Retry) makes it wait again.
//
// Each succeeded child's result is checkpointed under the same name as
// [Await] gives it, so a replay returns it without reading the child. When
// children failed or were cancelled, AwaitAll returns the results of the
// others (zero values in the failed places) and an error that joins a
// [*TaskError] per failed child, in hs order. A child that was deleted
// gives an error wrapping [core.ErrNotFound]; no handle, a nil handle, the
// same task twice, the calling task itself, more than [core.MaxAwaitJobs]
// handles or a handle from another store than the caller's, an error
// wrapping [core.ErrInvalidArgument]; a backend without [core.Awaiter], an
// error wrapping [core.ErrUnsupported] (there is no holding fallback). All
// of these are [Permanent]; bad input and an unsupported backend are
// refused before anything is stored or read. With [AwaitUntil] or [AwaitTimeout], a bound that
// comes first gives the results so far and an error wrapping
// [ErrAwaitTimeout].
func AwaitAll[Out any](ctx context.Context, hs []*Handle[Out], opts ...AwaitOption) ([]Out, error) {
	a, err := attemptFrom(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := refs(hs)
	if err != nil {
		return nil, err
	}
	raw, _, err := a.awaitMany(ctx, rs, core.AwaitAll, opts)
	if raw == nil {
		return nil, err
	}
	out := make([]Out, len(raw))
	for i, v := range raw {
		if v == nil {
			continue
		}
		var derr error
		if out[i], derr = decode[Out]("awaited result", v); derr != nil {
			return nil, derr
		}
	}
	return out, err
}

// AwaitAny waits until one of the tasks behind hs has ended and returns
// its index in hs and its result. It parks the caller as [AwaitAll] does
// (no slot, no lease, no polling) until the first child ends.
//
// The winner is the first child in hs order found ended when the task
// reads them, and it is checkpointed: every replay of the task picks the
// same child, whatever the others did since. The winner's result is
// checkpointed as in [Await]. A winner that failed or was cancelled gives
// its index and a [*TaskError]; a winner that was retried and has not
// ended again makes AwaitAny wait for that child alone. Errors that name no
// child give index -1; they are those of [AwaitAll].
func AwaitAny[Out any](ctx context.Context, hs []*Handle[Out], opts ...AwaitOption) (int, Out, error) {
	var zero Out
	a, err := attemptFrom(ctx)
	if err != nil {
		return -1, zero, err
	}
	rs, err := refs(hs)
	if err != nil {
		return -1, zero, err
	}
	raw, won, err := a.awaitMany(ctx, rs, core.AwaitAny, opts)
	if err != nil || won < 0 {
		return won, zero, err
	}
	v, err := decode[Out]("awaited result", raw[won])
	return won, v, err
}

// faninKey names the checkpoints of one fan-in: the mode and the ids in
// order.
func faninKey(mode core.AwaitMode, rs []awaited) string {
	h := sha256.New()
	h.Write([]byte(mode))
	for _, r := range rs {
		h.Write([]byte{0})
		h.Write([]byte(r.id))
	}
	return faninPrefix + hex.EncodeToString(h.Sum(nil)[:12])
}

// winner is the checkpointed choice of an AwaitAny.
type winner struct {
	Index int    `json:"index"`
	JobID string `json:"job_id"`
}

// awaitMany is the body of AwaitAll and AwaitAny. It returns one stored
// result per child (nil where there is none) and, for AwaitAny, the
// winner's index (else -1). raw is nil when err names no child.
func (a *attempt) awaitMany(ctx context.Context, rs []awaited, mode core.AwaitMode, opts []AwaitOption) (raw [][]byte, won int, err error) {
	var cfg awaitConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.timeout < 0 || cfg.timeoutSet && cfg.timeout == 0 {
		return nil, -1, Permanent(fmt.Errorf("%w: fan-in timeout %v must be positive", core.ErrInvalidArgument, cfg.timeout))
	}
	ids := make([]string, 0, len(rs))
	for _, r := range rs {
		ids = append(ids, r.id)
	}
	// Refuse bad input before anything is stored: the request the worker
	// would send must be valid.
	probe := core.AwaitRequest{Lease: a.currentLease(), JobIDs: ids, Mode: mode, Until: cfg.until, CancelChildren: cfg.cancelChildren}
	if err := core.ValidateAwait(probe); err != nil {
		return nil, -1, Permanent(fmt.Errorf("boson: fan-in: %w", err))
	}
	if _, ok := a.b.(core.Awaiter); !ok {
		return nil, -1, Permanent(fmt.Errorf("%w: fan-in: the backend of queue %s (%T) cannot park a task on other tasks (no core.Awaiter)", core.ErrUnsupported, a.job.Queue, a.b))
	}
	key := faninKey(mode, rs)
	until, err := a.faninBound(ctx, key, cfg)
	if err != nil {
		return nil, -1, err
	}
	if mode == core.AwaitAll {
		raw, _, err := a.readChildren(ctx, rs, until, cfg, true)
		return raw, -1, err
	}

	w, ok, err := a.faninWinner(ctx, key, rs)
	if err != nil {
		return nil, -1, err
	}
	if !ok {
		got, first, err := a.readChildren(ctx, rs, until, cfg, false)
		if first < 0 {
			return nil, -1, err
		}
		// Record the winner; the first write wins, so a replay follows the
		// stored choice.
		enc, _ := json.Marshal(winner{Index: first, JobID: rs[first].id})
		if _, serr := a.save(ctx, key+"-won", enc); serr != nil {
			return nil, -1, serr
		}
		if w, _, serr := a.faninWinner(ctx, key, rs); serr != nil {
			return nil, -1, serr
		} else if w == first {
			return got, first, err
		}
	}
	// Replay of a recorded winner: read (or wait for) that child alone.
	one, _, err := a.readChildren(ctx, rs[w:w+1], until, cfg, true)
	if one == nil {
		return nil, -1, err
	}
	raw = make([][]byte, len(rs))
	raw[w] = one[0]
	return raw, w, err
}

// faninBound returns the wait's recorded bound (zero for none), recording
// it on first use.
func (a *attempt) faninBound(ctx context.Context, key string, cfg awaitConfig) (time.Time, error) {
	if cfg.until.IsZero() && cfg.timeout == 0 {
		return time.Time{}, nil
	}
	name := key + "-until"
	v, ok, err := a.checkpoint(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		t := cfg.until
		if cfg.timeout > 0 {
			t = a.w.clock.Now().Add(cfg.timeout)
		}
		enc, _ := t.UTC().MarshalText()
		if v, err = a.save(ctx, name, enc); err != nil {
			return time.Time{}, err
		}
	}
	var t time.Time
	if err := t.UnmarshalText(v); err != nil {
		return time.Time{}, Permanent(fmt.Errorf("%w: fan-in: stored bound %q: %v", core.ErrInvalidArgument, v, err))
	}
	return t, nil
}

// faninWinner returns the recorded winner of an AwaitAny, if any.
func (a *attempt) faninWinner(ctx context.Context, key string, rs []awaited) (int, bool, error) {
	v, ok, err := a.checkpoint(ctx, key+"-won")
	if err != nil || !ok {
		return -1, false, err
	}
	var w winner
	if err := json.Unmarshal(v, &w); err != nil || w.Index < 0 || w.Index >= len(rs) || rs[w.Index].id != w.JobID {
		return -1, false, Permanent(fmt.Errorf("%w: fan-in: stored winner %q does not name one of the %d awaited tasks", core.ErrInvalidArgument, v, len(rs)))
	}
	return w.Index, true, nil
}

// readChildren reads every child not yet checkpointed and checkpoints the
// results of those that succeeded. With all set it needs every child ended;
// otherwise it stops at the first ended child, whose index it returns as
// first. When the wait is not satisfied it returns a [*SuspendError]
// carrying the wait, or an error wrapping [ErrAwaitTimeout] once the bound
// has passed.
func (a *attempt) readChildren(ctx context.Context, rs []awaited, until time.Time, cfg awaitConfig, all bool) (raw [][]byte, first int, err error) {
	raw = make([][]byte, len(rs))
	first = -1
	var (
		failed  []error
		pending []string
	)
	for i, r := range rs {
		key := awaitPrefix + r.id
		if err := core.ValidateName("await", key); err != nil {
			return nil, -1, Permanent(err)
		}
		v, ok, err := a.checkpoint(ctx, key)
		if err != nil {
			return nil, -1, err
		}
		if !ok {
			var j core.Job
			j, err = a.b.GetJob(ctx, r.id)
			switch {
			case errors.Is(err, core.ErrNotFound) && r.b != nil && r.b != a.b:
				return nil, -1, Permanent(fmt.Errorf("%w: fan-in: task %s (queue %s) is not in the awaiting task's store; awaited tasks must share it: %v", core.ErrInvalidArgument, r.id, r.queue, err))
			case errors.Is(err, core.ErrNotFound):
				return nil, -1, Permanent(fmt.Errorf("boson: fan-in: awaited task %s was deleted: %w", r.id, err))
			case err != nil:
				return nil, -1, fmt.Errorf("boson: fan-in: read task %s: %w", r.id, err)
			}
			switch {
			case !j.State.Terminal():
				pending = append(pending, r.id)
				continue
			case j.State != core.StateSucceeded:
				_, terr := resultOf[struct{}](j)
				failed = append(failed, terr)
				if !all && first < 0 {
					return raw, i, terr
				}
				continue
			}
			res, err := a.decodeAwaited(j)
			if err != nil {
				return nil, -1, err
			}
			if v, err = a.save(ctx, key, res); err != nil {
				return nil, -1, err
			}
		}
		raw[i] = v
		if !all {
			return raw, i, nil
		}
	}
	if len(pending) == 0 {
		return raw, first, errors.Join(failed...)
	}
	if !until.IsZero() && !a.w.clock.Now().Before(until) {
		return raw, first, fmt.Errorf("%w: %d of %d awaited tasks had not ended by %s", ErrAwaitTimeout, len(pending), len(rs), until.Format(time.RFC3339Nano))
	}
	if err := a.mayStart(ctx); err != nil {
		return nil, -1, err
	}
	mode := core.AwaitAny
	if all {
		mode = core.AwaitAll
	}
	req := core.AwaitRequest{JobIDs: pending, Mode: mode, Until: until, CancelChildren: cfg.cancelChildren}
	return nil, -1, &SuspendError{Sleep: "await " + strconv.Itoa(len(pending)) + " of " + strconv.Itoa(len(rs)), Until: req.WakeAt(), await: &req}
}
