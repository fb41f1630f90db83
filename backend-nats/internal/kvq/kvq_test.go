package kvq_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boson-go/boson/backend-nats/internal/kvq"
	"github.com/boson-go/boson/conformance"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func startServer(t testing.TB) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{ServerName: "kvq-test", Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		t.Fatal("server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s.ClientURL()
}

func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

var seq atomic.Int64

func harness(nc *nats.Conn) conformance.Harness {
	return conformance.Harness{
		Name: "kvq",
		New: func(t testing.TB, o conformance.Options) core.QueueBackend {
			ns := fmt.Sprintf("k%d-%d", os.Getpid(), seq.Add(1))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := kvq.New(ctx, nc, kvq.Options{Namespace: ns, DecisionClock: o.Clock, Limits: o.Limits})
			if err != nil {
				t.Fatalf("kvq.New: %v", err)
			}
			t.Cleanup(func() {
				b.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = kvq.DeleteNamespace(ctx, nc, ns)
			})
			return b
		},
		Capabilities: conformance.Capabilities{Notify: true},
	}
}

// TestConformance runs the suite on an embedded current server.
func TestConformance(t *testing.T) {
	conformance.Run(t, harness(connect(t, startServer(t))))
}
