package e2e_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// The split topology on each durable backend: this process only spawns;
// worker processes (this test binary, re-run as a worker) drain the queue.
// The first worker is stopped with SIGTERM half-way and shuts down
// gracefully; a second worker process finishes the rest. Every job runs
// exactly once.

const envSplitMarker = "BOSON_E2E_SPLIT_MARKER"

var splitTask = boson.NewTask[int, int]("split")

func TestSplitProcessesDrain(t *testing.T) {
	if os.Getenv(envKillBackend) != "" {
		return // the child of another run
	}
	for _, f := range backends {
		if !f.Durable {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			locator := f.Locator(t)
			b := f.Open(t, nil, locator, true)
			client, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet, PollInterval: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			const n = 40
			ins := make([]int, n)
			for i := range ins {
				ins[i] = i
			}
			hs, err := boson.SpawnBatch(ctx, client, splitTask, ins, boson.WithQueue("split"))
			if err != nil {
				t.Fatal(err)
			}
			marker := t.TempDir() + "/done"
			worker := func(id string) (*exec.Cmd, *bytes.Buffer) {
				cmd := exec.Command(os.Args[0], "-test.run=^TestSplitWorkerChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), envKillBackend+"="+f.Name, envKillLocator+"="+locator,
					envSplitMarker+"="+marker, "BOSON_WORKER_ID="+id)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				return cmd, &out
			}
			first, out1 := worker("split-first")
			waitUntil(t, "the first worker to finish some jobs", func() bool {
				m, _ := os.ReadFile(marker)
				return len(strings.Fields(string(m))) >= 5
			})
			if err := first.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := first.Wait(); err != nil {
				t.Fatalf("first worker: %v\n%s", err, out1)
			}
			second, out2 := worker("split-second")
			defer func() {
				_ = second.Process.Signal(syscall.SIGTERM)
				if err := second.Wait(); err != nil {
					t.Errorf("second worker: %v\n%s", err, out2)
				}
			}()
			for _, h := range hs {
				if _, err := h.Wait(ctx); err != nil {
					t.Fatalf("job %s: %v", h.ID(), err)
				}
			}
			seen := map[string]int{}
			m, _ := os.ReadFile(marker)
			for _, s := range strings.Fields(string(m)) {
				seen[s]++
			}
			for i := range n {
				if c := seen[strconv.Itoa(i)]; c != 1 {
					t.Fatalf("job %d ran %d times", i, c)
				}
			}
			st, err := b.TaskStats(ctx, "split")
			if err != nil {
				t.Fatal(err)
			}
			if st.Runs[core.RunSucceeded] != n || st.Jobs[core.StateSucceeded] != n {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestSplitWorkerChild is a worker process of TestSplitProcessesDrain; it
// does nothing unless started by it. Its settings come from the
// environment, as a deployed worker's would.
func TestSplitWorkerChild(t *testing.T) {
	name, marker := os.Getenv(envKillBackend), os.Getenv(envSplitMarker)
	if name == "" || marker == "" {
		return
	}
	var f backendFactory
	for _, c := range backends {
		if c.Name == name {
			f = c
		}
	}
	b := f.Open(t, nil, os.Getenv(envKillLocator), false)
	opts, err := boson.WorkerOptionsFromEnv(boson.WorkerOptions{Queues: []string{"split"}, Concurrency: 2, Logger: quiet,
		PollInterval: 20 * time.Millisecond, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := boson.NewWorker(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, splitTask, func(_ context.Context, i int) (int, error) {
		f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		_, err = f.WriteString(strconv.Itoa(i) + "\n")
		time.Sleep(5 * time.Millisecond) // a little work, so that SIGTERM lands mid-queue
		return i, err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(80 * time.Second):
			stop() // the parent died: do not linger
		}
	}()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
}
