package redisq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// Backend is a core.QueueBackend and core.Notifier on Redis. Create it with
// New. It is safe for concurrent use by many goroutines and processes.
type Backend struct {
	rdb     redis.UniversalClient
	opts    Options
	ks      keyspace
	sharded bool // keys of different queues may live on different nodes

	closed    atomic.Bool
	functions atomic.Bool // run the scripts with FCALL (see eval)

	qmu    sync.Mutex
	qcache map[string]string // job id -> queue, for jobs seen by this process

	hub *hub
}

var (
	_ core.QueueBackend = (*Backend)(nil)
	_ core.Notifier     = (*Backend)(nil)
)

// New returns a Backend on client, which may be a single node, a Sentinel
// failover client or a Cluster client. The backend does not close client.
// Invalid options give an error wrapping core.ErrInvalidArgument.
func New(client redis.UniversalClient, opts Options) (*Backend, error) {
	if client == nil {
		return nil, invalidf("redisq: client must not be nil")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	_, single := client.(*redis.Client)
	b := &Backend{
		rdb:     client,
		opts:    opts,
		ks:      keyspace{prefix: opts.Prefix, oneSlot: opts.OneSlot, nsFlow: single || opts.OneSlot},
		sharded: !single && !opts.OneSlot,
		qcache:  map[string]string{},
	}
	b.functions.Store(opts.Scripts == ScriptsAuto)
	b.hub = newHub(b)
	return b, nil
}

// Close stops the backend's subscriptions. Later calls of any method return
// an error wrapping core.ErrClosed. The client handed to New stays open.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.hub.close()
	return nil
}

func (b *Backend) check(op string) error {
	if b.closed.Load() {
		return fmt.Errorf("redisq: %s: %w", op, core.ErrClosed)
	}
	return nil
}

// nowArg is ARGV[1] of every script: the override clock in µs, or "" for the
// server's TIME.
func (b *Backend) nowArg() string {
	if b.opts.Clock == nil {
		return ""
	}
	return strconv.FormatInt(b.opts.Clock.Now().UnixMicro(), 10)
}

// now returns the backend's current time: the override clock, or the
// server's TIME.
func (b *Backend) now(ctx context.Context) (time.Time, error) {
	if b.opts.Clock != nil {
		return b.opts.Clock.Now().UTC(), nil
	}
	t, err := b.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, wrap("time", err)
	}
	return t.UTC(), nil
}

// wrap labels a Redis error with the operation; context errors pass through
// errors.Is.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("redisq: %s: %w", op, err)
}

const qcacheMax = 1 << 16

func (b *Backend) remember(id, queue string) {
	b.qmu.Lock()
	if len(b.qcache) >= qcacheMax {
		clear(b.qcache)
	}
	b.qcache[id] = queue
	b.qmu.Unlock()
}

func (b *Backend) forget(id string) {
	b.qmu.Lock()
	delete(b.qcache, id)
	b.qmu.Unlock()
}

// queueOf finds the queue of a job: from this process's cache, else from
// the {prefix}:jobq hash. ok is false when the job is unknown.
func (b *Backend) queueOf(ctx context.Context, id string) (queue string, ok bool, err error) {
	b.qmu.Lock()
	q, hit := b.qcache[id]
	b.qmu.Unlock()
	if hit {
		return q, true, nil
	}
	q, err = b.rdb.HGet(ctx, b.ks.jobQueue(), id).Result()
	if errors.Is(err, redis.Nil) {
		found, err := b.searchQueues(ctx, []string{id})
		if err != nil {
			return "", false, err
		}
		q, ok := found[id]
		return q, ok, nil
	}
	if err != nil {
		return "", false, wrap("find job", err)
	}
	return q, true, nil
}

// searchQueues looks for jobs that {prefix}:jobq does not map in every
// queue, and maps the ones it finds again. The map can only lack a stored
// job when the node of the {prefix} slot lost writes that the node of the
// job's queue kept (a failover or restart on a cluster).
func (b *Backend) searchQueues(ctx context.Context, ids []string) (map[string]string, error) {
	qs, err := b.rdb.SMembers(ctx, b.ks.queues()).Result()
	if err != nil {
		return nil, wrap("find job", err)
	}
	out := map[string]string{}
	if len(qs) == 0 {
		return out, nil
	}
	pipe := b.rdb.Pipeline()
	cmds := make([][]*redis.BoolCmd, len(qs))
	for i, q := range qs {
		for _, id := range ids {
			cmds[i] = append(cmds[i], pipe.HExists(ctx, b.ks.queueKeys(q)[kJob], id))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("find job", err)
	}
	var repair []any
	for i, q := range qs {
		for n, id := range ids {
			if cmds[i][n].Val() {
				out[id] = q
				repair = append(repair, id, q)
			}
		}
	}
	if len(repair) > 0 {
		if err := b.rdb.HSet(ctx, b.ks.jobQueue(), repair...).Err(); err != nil {
			return nil, wrap("find job", err)
		}
		b.opts.Logger.Warn("redisq: restored lost job-to-queue entries", "jobs", len(repair)/2)
	}
	return out, nil
}

// queuesOf maps many job ids to their queues in one round trip for the ids
// not in the cache. Unknown ids are absent from the result.
func (b *Backend) queuesOf(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	var miss []string
	b.qmu.Lock()
	for _, id := range ids {
		if q, ok := b.qcache[id]; ok {
			out[id] = q
		} else {
			miss = append(miss, id)
		}
	}
	b.qmu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	vals, err := b.rdb.HMGet(ctx, b.ks.jobQueue(), miss...).Result()
	if err != nil {
		return nil, wrap("find jobs", err)
	}
	var unknown []string
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out[miss[i]] = s
		} else {
			unknown = append(unknown, miss[i])
		}
	}
	if len(unknown) > 0 {
		found, err := b.searchQueues(ctx, unknown)
		if err != nil {
			return nil, err
		}
		for id, q := range found {
			out[id] = q
		}
	}
	return out, nil
}

// run executes a script on one queue group.
func (b *Backend) run(ctx context.Context, s *luaScript, queue string, args ...any) (any, error) {
	full := make([]any, 0, len(args)+2)
	full = append(full, b.nowArg(), b.ks.channel(queue))
	full = append(full, args...)
	return b.eval(ctx, s, b.ks.keysOf(queue, s.keys), full...)
}
