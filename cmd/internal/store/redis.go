package store

import (
	"context"
	"fmt"
	"net/url"

	redisq "github.com/boson-go/boson/backend-redis"
	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// openRedis opens "redis://host:port/db?prefix=NAME"; other options go to
// go-redis.
func openRedis(ctx context.Context, raw string, opts Options) (*Store, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalidURL(raw, err.Error())
	}
	prefix := takeParam(u, "prefix")
	if prefix == "" {
		prefix = "boson"
	}
	if err := core.ValidateName("prefix", prefix); err != nil {
		return nil, invalidURL(raw, err.Error())
	}
	if opts.Isolate {
		prefix = prefix + "-" + uniqueSuffix()
	}
	ro, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, invalidURL(raw, err.Error())
	}
	client := redis.NewClient(ro)
	s := &Store{Kind: "redis"}
	s.wireFn = s.wire.Load
	client.AddHook(redisCounter{n: &s.wire})
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("connect redis %s: %w", u.Redacted(), err)
	}
	b, err := redisq.New(client, redisq.Options{Prefix: prefix})
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis %s: %w", u.Redacted(), err)
	}
	s.Backend = b
	s.Location = u.Redacted() + " prefix " + prefix
	s.onClose(client.Close)
	if opts.drops() {
		s.isolated = true
		s.onClose(func() error { return dropRedisPrefix(client, prefix) })
	}
	s.onClose(b.Close)
	return s, nil
}

// dropRedisPrefix unlinks every key of the prefix: "{prefix}..." and
// "{prefix:queue}...".
func dropRedisPrefix(c *redis.Client, prefix string) error {
	ctx := context.Background()
	for _, pat := range []string{"{" + prefix + "}*", "{" + prefix + ":*"} {
		it := c.Scan(ctx, 0, pat, 1000).Iterator()
		var keys []string
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		if err := it.Err(); err != nil {
			return err
		}
		for len(keys) > 0 {
			n := min(len(keys), 500)
			if err := c.Unlink(ctx, keys[:n]...).Err(); err != nil {
				return err
			}
			keys = keys[n:]
		}
	}
	return nil
}

// redisCounter counts the commands a client sends (a pipeline counts each
// of its commands).
type redisCounter struct{ n interface{ Add(int64) int64 } }

func (redisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
