package faults_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	redisq "github.com/boson-go/boson/backend-redis"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// store is one durable backend the runner drives. A store is reached at a
// URL (a file path for SQLite); a proxy can sit in front of a networked
// one by rewriting the URL's host.
type store struct {
	Name string
	// Networked stores have a TCP server a proxy can sit in front of.
	Networked bool
	// URL is the store's address: a database URL, or "" for SQLite (whose
	// locator is the file).
	URL string
	// Open opens the backend at locator through url; the owner removes the
	// data at cleanup. clock may be nil (the store's clock).
	Open func(t testing.TB, url, locator string, owner bool) core.QueueBackend
	// Locator returns a fresh locator (file, schema, prefix, namespace).
	Locator func(t testing.TB) string
}

var nameSeq atomic.Int64

func uniqueName(kind string) string {
	return fmt.Sprintf("flt%s%d_%d_%s", kind, os.Getpid(), nameSeq.Add(1), strings.ToLower(core.NewID(time.Now())[20:]))
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// answering skips t when the server at rawURL does not answer, or fails it
// when BOSON_TEST_REQUIRE requires the service (testreq).
func answering(t testing.TB, service, rawURL string) {
	t.Helper()
	u, err := url.Parse(strings.Split(rawURL, ",")[0])
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	testreq.Unavailable(t, service, fmt.Sprintf("%s does not answer: %v", u.Host, err))
}

// withHost returns rawURL with its host:port replaced by addr.
func withHost(rawURL, addr string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Host = addr
	return u.String()
}

func hostOf(rawURL string) string {
	u, _ := url.Parse(rawURL)
	return u.Host
}

func sqliteStore() store {
	return store{
		Name: "sqlite",
		Open: func(t testing.TB, _, path string, _ bool) core.QueueBackend {
			ctx := context.Background()
			b, err := sqliteq.Open(ctx, path, sqliteq.Options{Logger: quiet, PollInterval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			if err := b.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			return b
		},
		Locator: func(t testing.TB) string { return filepath.Join(t.TempDir(), "boson.db") },
	}
}

func postgresStore(rawURL string) store {
	return store{
		Name: "postgres", Networked: true, URL: rawURL,
		Open: func(t testing.TB, rawURL, schema string, owner bool) core.QueueBackend {
			answering(t, testreq.Postgres, rawURL)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cfg, err := pgxpool.ParseConfig(rawURL)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 4
			cfg.ConnConfig.ConnectTimeout = 3 * time.Second
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := postgres.New(pool, postgres.Options{Schema: schema, Logger: quiet, PollInterval: 50 * time.Millisecond})
			if err != nil {
				pool.Close()
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = b.Close()
				if owner {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					_, _ = pool.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
				}
				pool.Close()
			})
			if owner {
				if err := b.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
			}
			return b
		},
		Locator: func(testing.TB) string { return uniqueName("p") },
	}
}

func redisStore(rawURL string) store {
	return store{
		Name: "redis", Networked: true, URL: rawURL,
		Open: func(t testing.TB, rawURL, prefix string, owner bool) core.QueueBackend {
			answering(t, testreq.Redis, rawURL)
			opt, err := redis.ParseURL(rawURL)
			if err != nil {
				t.Fatal(err)
			}
			opt.PoolSize = 8
			opt.DialTimeout = 2 * time.Second
			opt.ReadTimeout = 2 * time.Second
			opt.WriteTimeout = 2 * time.Second
			c := redis.NewClient(opt)
			b, err := redisq.New(c, redisq.Options{Prefix: prefix, Logger: quiet, PollInterval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = b.Close()
				if owner {
					ctx := context.Background()
					iter := c.Scan(ctx, 0, "{"+prefix+"*", 1000).Iterator()
					for iter.Next(ctx) {
						c.Del(ctx, iter.Val())
					}
				}
				_ = c.Close()
			})
			return b
		},
		Locator: func(testing.TB) string { return uniqueName("r") },
	}
}

func natsStore(rawURL string) store { return natsStoreReplicas("nats", rawURL, 1) }

// natsClusterStore is NATS on a three-node cluster: rawURL lists the
// nodes, separated by commas, and the command stream has three replicas.
func natsClusterStore(rawURL string) store { return natsStoreReplicas("nats3", rawURL, 3) }

func natsStoreReplicas(name, rawURL string, replicas int) store {
	return store{
		Name: name, Networked: replicas == 1, URL: rawURL,
		Open: func(t testing.TB, rawURL, ns string, owner bool) core.QueueBackend {
			service := testreq.NATS
			if replicas > 1 {
				service = testreq.NATSCluster
			}
			answering(t, service, rawURL)
			nc, err := nats.Connect(rawURL, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
				nats.Timeout(3*time.Second))
			if err != nil {
				t.Fatalf("connect %s: %v", rawURL, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var b *natsq.Backend
			for attempt := 1; ; attempt++ {
				b, err = natsq.New(ctx, nc, natsq.Options{Namespace: ns, Replicas: replicas, Logger: quiet, PollInterval: 50 * time.Millisecond})
				if err == nil || attempt == 5 || ctx.Err() != nil {
					break
				}
				time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
			}
			if err != nil {
				nc.Close()
				t.Fatalf("natsq.New: %v", err)
			}
			t.Cleanup(func() {
				_ = b.Close()
				if owner {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					_ = natsq.DeleteNamespace(ctx, nc, ns)
				}
				nc.Close()
			})
			return b
		},
		Locator: func(testing.TB) string { return uniqueName("n") },
	}
}

// sharedStores are the durable backends on the machine's shared servers.
func sharedStores() []store {
	return []store{
		sqliteStore(),
		postgresStore(envOr("BOSON_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")),
		redisStore(envOr("BOSON_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")),
		natsStore(envOr("BOSON_TEST_NATS_URL", "nats://127.0.0.1:4222")),
	}
}

// storeNamed returns the store a worker process was told to open.
func storeNamed(name, rawURL string) (store, bool) {
	switch name {
	case "sqlite":
		return sqliteStore(), true
	case "postgres":
		return postgresStore(rawURL), true
	case "redis":
		return redisStore(rawURL), true
	case "nats":
		return natsStore(rawURL), true
	case "nats3":
		return natsClusterStore(rawURL), true
	}
	return store{}, false
}
