package extest

import (
	"context"
	"strings"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

// DropNamespace registers the removal of namespace ns from the store at
// url when t ends: the Postgres schema, the Redis keys under the prefix or
// the NATS namespace's stream and buckets. Failures are logged, not fatal:
// the name is unique, so a leftover harms no other test.
func DropNamespace(t testing.TB, url, ns string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := dropNamespace(ctx, url, ns); err != nil {
			t.Logf("dropping %s: %v", ns, err)
		}
	})
}

func dropNamespace(ctx context.Context, url, ns string) error {
	scheme, _, _ := strings.Cut(url, "://")
	switch scheme {
	case "postgres", "postgresql":
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{ns}.Sanitize()+" CASCADE")
		return err
	case "redis", "rediss":
		opts, err := redis.ParseURL(url)
		if err != nil {
			return err
		}
		c := redis.NewClient(opts)
		defer c.Close()
		for _, pattern := range []string{"{" + ns + "*", ns + ":*"} {
			iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				if err := c.Del(ctx, iter.Val()).Err(); err != nil {
					return err
				}
			}
			if err := iter.Err(); err != nil {
				return err
			}
		}
		return nil
	case "nats":
		nc, err := nats.Connect(url)
		if err != nil {
			return err
		}
		defer nc.Close()
		return natsq.DeleteNamespace(ctx, nc, ns)
	}
	return nil
}
