package cli

import (
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

func TestCreateQueueCommand(t *testing.T) {
	for _, o := range opsTargets(t) {
		t.Run(o.name, func(t *testing.T) {
			r := o.must(t, ExitOK, "create-queue", "orders", "--retention", "24h", "--cleanup-limit", "9")
			if strings.TrimSpace(r.stdout) != "declared orders" {
				t.Fatalf("first create-queue: %q", r.stdout)
			}
			r = o.must(t, ExitOK, "create-queue", "orders", "--retention", "24h", "--cleanup-limit", "9", "--json")
			out := decode[createQueueOut](t, r)
			want := core.QueueConfig{Queue: "orders", RetentionTTL: 24 * time.Hour, CleanupLimit: 9}
			if out.Created || out.Config != want {
				t.Fatalf("repeat create-queue --json: %+v", out)
			}
			r = o.must(t, ExitRefused, "create-queue", "orders", "--retention", "1h")
			if !strings.Contains(r.stderr, "declared with another config") || !strings.Contains(r.stderr, "24h") {
				t.Fatalf("conflicting create-queue: %q", r.stderr)
			}
			if cfg, err := o.be.GetQueueConfig(t.Context(), "orders"); err != nil || cfg != want {
				t.Fatalf("config after the conflict: %+v, %v", cfg, err)
			}
			o.must(t, ExitUsage, "create-queue", "bad queue")
			o.must(t, ExitUsage, "create-queue", "orders", "--cleanup-limit", "-1")
			o.must(t, ExitOK, "delete-queue", "orders", "--yes", "--no-progress")
			if ok, err := core.QueueDeclared(t.Context(), o.be, "orders"); err != nil || ok {
				t.Fatalf("declared after delete-queue: %v, %v", ok, err)
			}
			r = o.must(t, ExitOK, "create-queue", "orders", "--retention", "1h")
			if strings.TrimSpace(r.stdout) != "declared orders" {
				t.Fatalf("create-queue after delete-queue: %q", r.stdout)
			}
		})
	}
}

func TestCreateQueueUnsupported(t *testing.T) {
	m := mem.New(mem.Options{})
	t.Cleanup(func() { _ = m.Close() })
	r := opsTarget{name: "base", be: hidden{m}}.must(t, ExitUnsupported, "create-queue", "orders")
	if !strings.Contains(r.stderr, "does not offer declared queues") {
		t.Fatalf("create-queue on a store without declarations: %q", r.stderr)
	}
}
