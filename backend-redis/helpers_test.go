package redisq

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

var prefixSeq atomic.Int64

// uniquePrefix returns a key prefix no other test of this or another test
// binary uses.
func uniquePrefix(t testing.TB) string {
	return "t" + strings.ToLower(core.NewID(time.Now())[16:]) + "x" + itoa(prefixSeq.Add(1))
}

func itoa(n int64) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{digits[n%10]}, b...)
		n /= 10
	}
	return string(b)
}

// standaloneURL is the Redis the focused tests use.
func standaloneURL() string {
	if u := os.Getenv("BOSON_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func standaloneClient(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(standaloneURL())
	if err != nil {
		t.Fatalf("redis url: %v", err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(context.Background()).Err(); err != nil {
		c.Close()
		t.Skipf("redis at %s does not answer: %v", standaloneURL(), err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dropPrefix deletes every key of a prefix.
func dropPrefix(c redis.UniversalClient, prefix string) {
	ctx := context.Background()
	del := func(cl redis.UniversalClient) {
		iter := cl.Scan(ctx, 0, "{"+prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			cl.Del(ctx, iter.Val())
		}
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			del(n)
			return nil
		})
		return
	}
	del(c)
}

// newBackend returns a backend on c with a fresh prefix and the options
// given, dropping its keys after the test.
func newBackend(t testing.TB, c redis.UniversalClient, opts Options) *Backend {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = uniquePrefix(t)
	}
	b, err := New(c, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		b.Close()
		dropPrefix(c, opts.Prefix)
	})
	return b
}
