package redisq

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

var _ core.QueueDeclarer = (*Backend)(nil)

// createRetries bounds how often CreateQueue retries its transaction when
// another client wrote the queue's config between its read and its write.
const createRetries = 100

// CreateQueue implements core.QueueDeclarer. The declaration is the
// "declared" field of the queue's config hash, which PutQueueConfig leaves
// alone and DeleteQueue deletes with the hash. The check and the write are
// one optimistic transaction on that one key (WATCH, then MULTI/EXEC), so
// it works the same on a cluster: of concurrent calls exactly one declares
// the queue, and the others read its config on their retry.
func (b *Backend) CreateQueue(ctx context.Context, cfg core.QueueConfig) (core.QueueConfig, bool, error) {
	if err := b.check("create queue"); err != nil {
		return core.QueueConfig{}, false, err
	}
	if err := core.ValidateQueueConfig(cfg); err != nil {
		return core.QueueConfig{}, false, err
	}
	// Registered first, as PutQueueConfig does: a declared queue is listed.
	if err := b.rdb.SAdd(ctx, b.ks.queues(), cfg.Queue).Err(); err != nil {
		return core.QueueConfig{}, false, wrap("create queue", err)
	}
	key := b.ks.queueKeys(cfg.Queue)[kConf]
	var stored core.QueueConfig
	var created bool
	txf := func(tx *redis.Tx) error {
		m, err := tx.HGetAll(ctx, key).Result()
		if err != nil {
			return err
		}
		prev := confFromHash(cfg.Queue, m)
		if m["declared"] == "1" {
			stored, created = prev, false
			return nil
		}
		stored = core.DeclaredConfig(prev, cfg)
		paused := "0"
		if stored.Paused {
			paused = "1"
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "paused", paused, "retention", int64(stored.RetentionTTL), "cleanup_limit", stored.CleanupLimit, "max_running", stored.MaxRunning, "declared", "1")
			return nil
		})
		created = err == nil
		return err
	}
	for i := 0; ; i++ {
		err := b.rdb.Watch(ctx, txf, key)
		if err == nil {
			break
		}
		if !errors.Is(err, redis.TxFailedErr) || i >= createRetries {
			return core.QueueConfig{}, false, wrap("create queue", err)
		}
	}
	if !created && !core.QueueConfigsMatch(stored, cfg) {
		return stored, false, core.QueueConflict(stored, cfg)
	}
	return stored, created, nil
}

// QueueDeclared implements core.QueueDeclarer.
func (b *Backend) QueueDeclared(ctx context.Context, queue string) (bool, error) {
	if err := b.check("queue declared"); err != nil {
		return false, err
	}
	if err := core.ValidateName("queue", queue); err != nil {
		return false, err
	}
	v, err := b.rdb.HGet(ctx, b.ks.queueKeys(queue)[kConf], "declared").Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, wrap("queue declared", err)
	}
	return v == "1", nil
}

// confFromHash reads a queue's config from its config hash, as
// GetQueueConfig does.
func confFromHash(queue string, m map[string]string) core.QueueConfig {
	out := core.QueueConfig{Queue: queue, Paused: m["paused"] == "1"}
	ttl, _ := strconv.ParseInt(m["retention"], 10, 64)
	out.RetentionTTL = time.Duration(ttl)
	out.CleanupLimit, _ = strconv.Atoi(m["cleanup_limit"])
	out.MaxRunning, _ = strconv.Atoi(m["max_running"])
	return out
}
