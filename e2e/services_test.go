package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	redisq "github.com/boson-go/boson/backend-redis"
	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
)

var nameSeq atomic.Int64

// uniqueName returns a prefix or namespace no other backend of this run
// (or of a concurrent run) uses.
func uniqueName(kind string) string {
	return fmt.Sprintf("e2e%s%d-%d-%s", kind, os.Getpid(), nameSeq.Add(1), strings.ToLower(core.NewID(time.Now())[20:]))
}

// requireService skips the test when addr does not answer, or fails it when
// BOSON_TEST_REQUIRE requires the service (testreq), as in CI.
func requireService(t testing.TB, service, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		return
	}
	testreq.Unavailable(t, service, fmt.Sprintf("%s does not answer: %v", addr, err))
}

func newRedisBackend(t testing.TB, clock core.Clock) core.QueueBackend {
	t.Helper()
	return openRedisBackend(t, clock, uniqueName("r"), true)
}

// openRedisBackend opens a backend on prefix; the owner deletes its keys
// at cleanup.
func openRedisBackend(t testing.TB, clock core.Clock, prefix string, owner bool) core.QueueBackend {
	t.Helper()
	url := os.Getenv("BOSON_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redis url: %v", err)
	}
	requireService(t, "redis", opt.Addr)
	c := redis.NewClient(opt)
	b, err := redisq.New(c, redisq.Options{Prefix: prefix, Clock: clock, Logger: quiet, PollInterval: 200 * time.Millisecond})
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
}

func newNATSBackend(t testing.TB, clock core.Clock) core.QueueBackend {
	t.Helper()
	return openNATSBackend(t, clock, uniqueName("n"), true)
}

// openNATSBackend opens a backend on namespace ns; the owner deletes the
// namespace at cleanup.
func openNATSBackend(t testing.TB, clock core.Clock, ns string, owner bool) core.QueueBackend {
	t.Helper()
	url := os.Getenv("BOSON_TEST_NATS_URL")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	host := strings.TrimPrefix(url, "nats://")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	requireService(t, "nats", host)
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The server sometimes refuses to create a stream while many tests
	// create theirs at once ("error creating store for stream"); try again.
	var b *natsq.Backend
	for attempt := 1; ; attempt++ {
		b, err = natsq.New(ctx, nc, natsq.Options{Namespace: ns, DecisionClock: clock, Logger: quiet, PollInterval: 200 * time.Millisecond})
		if err == nil || attempt == 5 || ctx.Err() != nil {
			break
		}
		t.Logf("natsq.New (attempt %d): %v", attempt, err)
		if owner {
			_ = natsq.DeleteNamespace(ctx, nc, ns)
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
	if err != nil {
		nc.Close()
		t.Fatalf("natsq.New: %v", err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if owner {
			_ = natsq.DeleteNamespace(ctx, nc, ns)
		}
		nc.Close()
	})
	return b
}
