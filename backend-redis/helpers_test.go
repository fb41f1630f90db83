package redisq

import (
	"context"
	"os/exec"
	"testing"

	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/redis/go-redis/v9"
)

// uniquePrefix returns a key prefix no other test of this or another test
// binary uses.
func uniquePrefix(t testing.TB) string {
	return testenv.UniqueName(t, "redisq")
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

// standaloneURL is the single Redis the tests use: BOSON_TEST_REDIS_URL, or
// a redis-server that testenv starts (see testenv.Redis).
func standaloneURL(t testing.TB) string {
	t.Helper()
	return testenv.Redis(t)
}

func standaloneClient(t testing.TB) *redis.Client {
	t.Helper()
	u := standaloneURL(t)
	opt, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("redis url: %v", err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(context.Background()).Err(); err != nil {
		c.Close()
		t.Fatalf("redis at %s does not answer: %v", u, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// requireServerBinary skips t when redis-server is not on PATH, unless
// BOSON_TEST_REQUIRE requires service (testreq.RedisServer, or
// testreq.RedisCluster for a test of the private cluster), which makes it
// a failure.
func requireServerBinary(t testing.TB, service string) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testreq.Unavailable(t, service, "redis-server is not on PATH")
	}
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
