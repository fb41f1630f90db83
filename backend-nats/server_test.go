package natsq_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/conformance/testenv"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startServer starts a JetStream server inside the test process on a
// loopback port (port 0 picks a free one) with its store in dir.
func startServer(t testing.TB, dir string, port int) *server.Server {
	t.Helper()
	if port == 0 {
		port = -1
	}
	opts := &server.Options{
		ServerName: "boson-test",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoLog:      true,
		NoSigs:     true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats server did not become ready")
	}
	return s
}

// embeddedURL starts one embedded server for the whole test and returns
// its client URL.
func embeddedURL(t testing.TB) string {
	t.Helper()
	s := startServer(t, t.TempDir(), 0)
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

// externalURL returns the URL of the machine's NATS server (Debian ships
// 2.9): BOSON_TEST_NATS_URL, else nats://127.0.0.1:4222 when it answers.
// Without one the test skips, or fails when BOSON_TEST_REQUIRE asks for
// nats. It never starts a server of its own: the point is the machine's
// server version.
func externalURL(t testing.TB) string {
	t.Helper()
	return testenv.Lookup(t, testenv.Service{
		Name:   "nats",
		EnvVar: testenv.EnvNATS,
		Start: func() (string, func(), error) {
			const url = "nats://127.0.0.1:4222"
			c, err := net.DialTimeout("tcp", "127.0.0.1:4222", 2*time.Second)
			if err != nil {
				return "", nil, fmt.Errorf("%w: %s does not answer: %v", testenv.ErrUnavailable, url, err)
			}
			c.Close()
			return url, func() {}, nil
		},
	})
}

func connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

var nsSeq atomic.Int64

// namespace returns a namespace no other test of this run uses.
func namespace(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), nsSeq.Add(1))
}

// newBackend opens a backend on a fresh namespace and deletes the
// namespace when the test ends.
func newBackend(t testing.TB, nc *nats.Conn, opts natsq.Options) *natsq.Backend {
	t.Helper()
	if opts.Namespace == "" {
		opts.Namespace = namespace("t")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := natsq.New(ctx, nc, opts)
	if err != nil {
		t.Fatalf("natsq.New: %v", err)
	}
	t.Cleanup(func() {
		b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := natsq.DeleteNamespace(ctx, nc, opts.Namespace); err != nil {
			t.Logf("delete namespace %s: %v", opts.Namespace, err)
		}
	})
	return b
}

var _ core.QueueBackend = (*natsq.Backend)(nil)
