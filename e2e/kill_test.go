package e2e_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// The kill test: a worker process is killed with SIGKILL in the middle of
// a multi-step task; a worker in another process finishes it once the
// lease has expired. Finished steps do not run again and the task
// completes exactly once.
//
// The parent decides time with a manual clock that it moves past the dead
// worker's lease (which the child took on the process clock), so nothing
// waits for a real lease to run out.

const (
	envKillBackend = "BOSON_E2E_KILL_BACKEND"
	envKillLocator = "BOSON_E2E_KILL_LOCATOR"
	envKillMarker  = "BOSON_E2E_KILL_MARKER"
)

var (
	killTask  = boson.NewTask[int, int]("multi-step")
	killStep1 = boson.NewStep[int]("reserve")
	killStep2 = boson.NewStep[int]("charge")
	killStep3 = boson.NewStep[int]("ship")
)

// multiStep is the task both processes run. Each step body appends its
// name to the marker file; in the child, step "charge" blocks after its
// mark until the process is killed.
func multiStep(marker string, blockInCharge bool) func(context.Context, int) (int, error) {
	mark := func(s string) {
		f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, _ = f.WriteString(s + "\n")
			_ = f.Close()
		}
	}
	return func(ctx context.Context, n int) (int, error) {
		a, err := killStep1.Run(ctx, func(context.Context) (int, error) { mark("reserve"); return n + 1, nil })
		if err != nil {
			return 0, err
		}
		b, err := killStep2.Run(ctx, func(ctx context.Context) (int, error) {
			mark("charge")
			if blockInCharge {
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return a * 10, nil
		})
		if err != nil {
			return 0, err
		}
		return killStep3.Run(ctx, func(context.Context) (int, error) { mark("ship"); return b + 1, nil })
	}
}

func TestKillWorkerMidTask(t *testing.T) {
	if os.Getenv(envKillBackend) != "" {
		return // the child of another run
	}
	for _, f := range backends {
		if !f.Durable {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			clock := core.NewManualClock(time.Now())
			locator := f.Locator(t)
			b := f.Open(t, clock, locator, true)
			client, err := boson.NewClient(b, boson.ClientOptions{Clock: clock, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			h, err := boson.Spawn(ctx, client, killTask, 4, boson.WithQueue("kill"))
			if err != nil {
				t.Fatal(err)
			}
			marker := t.TempDir() + "/marks"

			cmd := exec.Command(os.Args[0], "-test.run=^TestKillWorkerChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), envKillBackend+"="+f.Name, envKillLocator+"="+locator, envKillMarker+"="+marker)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "the child to reach the charge step", func() bool {
				m, _ := os.ReadFile(marker)
				return strings.Contains(string(m), "charge")
			})
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = cmd.Wait()
			// A backend that replicates state to each process (NATS) may
			// show the child's claim a moment later.
			waitUntil(t, "the child's claim to be visible", func() bool {
				j, _ := b.GetJob(ctx, h.ID())
				return j.State == core.StateRunning && j.Lease.WorkerID == "kill-child"
			})

			// Past the dead worker's lease: rescue, then another worker finishes.
			clock.Set(time.Now().Add(2 * time.Hour))
			w, err := boson.NewWorker(b, boson.WorkerOptions{ID: "kill-survivor", Queues: []string{"kill"}, Clock: clock, Logger: quiet,
				PollInterval: 10 * time.Millisecond, RescueInterval: -1, RetentionInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := boson.Register(w, killTask, multiStep(marker, false)); err != nil {
				t.Fatal(err)
			}
			if r, err := w.Rescue(ctx); err != nil || r.Requeued != 1 {
				t.Fatalf("rescue %+v %v", r, err)
			}
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Shutdown(context.Background()) }()
			v, err := h.Wait(ctx)
			if err != nil || v != 51 {
				t.Fatalf("result %v %v", v, err)
			}
			m, _ := os.ReadFile(marker)
			if got := strings.Fields(string(m)); strings.Join(got, " ") != "reserve charge charge ship" {
				t.Fatalf("step bodies ran: %v", got)
			}
			runs, err := b.ListRuns(ctx, h.ID())
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 2 || runs[0].Status != core.RunLost || runs[0].WorkerID != "kill-child" ||
				runs[1].Status != core.RunSucceeded || runs[1].WorkerID != "kill-survivor" {
				t.Fatalf("runs %+v", runs)
			}
			if n, _ := b.CountJobs(ctx, core.JobFilter{Task: "multi-step"}); n[core.StateSucceeded] != 1 || len(n) != 1 {
				t.Fatalf("counts %v", n)
			}
		})
	}
}

// TestKillWorkerChild is the worker process of TestKillWorkerMidTask; it
// does nothing unless started by it.
func TestKillWorkerChild(t *testing.T) {
	name := os.Getenv(envKillBackend)
	if name == "" {
		return
	}
	var f backendFactory
	for _, c := range backends {
		if c.Name == name {
			f = c
		}
	}
	if f.Open == nil {
		t.Fatalf("unknown backend %q", name)
	}
	b := f.Open(t, nil, os.Getenv(envKillLocator), false)
	w, err := boson.NewWorker(b, boson.WorkerOptions{ID: "kill-child", Queues: []string{"kill"}, Logger: quiet,
		PollInterval: 10 * time.Millisecond, LeaseTTL: time.Hour, RescueInterval: -1, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, killTask, multiStep(os.Getenv(envKillMarker), true)); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute) // killed long before
	t.Fatal("the parent did not kill this worker")
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
