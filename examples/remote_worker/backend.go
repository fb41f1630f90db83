package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	natsq "github.com/boson-go/boson/backend-nats"
	redisq "github.com/boson-go/boson/backend-redis"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// openBackend opens the shared store named by url's scheme: postgres://
// (or postgresql://), redis:// (or rediss://) or nats://. ns isolates this
// application inside the store: the Postgres schema, the Redis key prefix
// or the NATS namespace. The returned function closes what it opened.
func openBackend(ctx context.Context, url, ns string, logger *slog.Logger) (core.QueueBackend, string, func(), error) {
	scheme, _, _ := strings.Cut(url, "://")
	switch scheme {
	case "postgres", "postgresql":
		b, err := postgres.Open(ctx, url, postgres.Options{Schema: ns, Logger: logger})
		if err != nil {
			return nil, "", nil, err
		}
		// Every process may migrate on start: Migrate is safe to run
		// concurrently and does nothing when the schema is current.
		if err := b.Migrate(ctx); err != nil {
			b.Close()
			return nil, "", nil, err
		}
		return b, "postgres", func() { b.Close() }, nil
	case "redis", "rediss":
		opts, err := redis.ParseURL(url)
		if err != nil {
			return nil, "", nil, err
		}
		rc := redis.NewClient(opts)
		b, err := redisq.New(rc, redisq.Options{Prefix: ns, Logger: logger})
		if err != nil {
			rc.Close()
			return nil, "", nil, err
		}
		return b, "redis", func() { b.Close(); rc.Close() }, nil
	case "nats":
		nc, err := nats.Connect(url)
		if err != nil {
			return nil, "", nil, err
		}
		b, err := natsq.New(ctx, nc, natsq.Options{Namespace: ns, Logger: logger})
		if err != nil {
			nc.Close()
			return nil, "", nil, err
		}
		return b, "nats", func() { b.Close(); nc.Close() }, nil
	default:
		return nil, "", nil, fmt.Errorf("%w: -url %q: want a postgres://, redis:// or nats:// URL", core.ErrInvalidArgument, url)
	}
}
