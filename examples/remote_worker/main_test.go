package main

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestRemoteWorkerPostgres(t *testing.T) {
	testRemoteWorker(t, "postgres", extest.PostgresURL(t))
}

func TestRemoteWorkerRedis(t *testing.T) {
	testRemoteWorker(t, "redis", extest.RedisURL(t))
}

func TestRemoteWorkerNATS(t *testing.T) {
	testRemoteWorker(t, "nats", extest.NATSURL(t))
}

// testRemoteWorker plays both sides against one store, in this order: an
// enqueue, then a worker that drains the queue; then a long-running worker
// and an enqueue that waits for its results.
func testRemoteWorker(t *testing.T, kind, url string) {
	ns := extest.Name(t, "ex_remote_"+kind)
	extest.DropNamespace(t, url, ns)
	common := []string{"-url", url, "-ns", ns}
	t.Setenv("BOSON_WORKER_ID", "remote-"+kind)

	out := extest.Run(t, run, append([]string{"-mode", "enqueue", "-n", "3", "-prefix", "a"}, common...)...)
	extest.Contains(t, out, "enqueued 3 documents on "+kind)

	out = extest.Run(t, run, append([]string{"-mode", "worker", "-drain"}, common...)...)
	extest.Contains(t, out,
		`worker serving queue "documents" on `+kind,
		"worked a-1 -> ", "worked a-2 -> ", "worked a-3 -> ",
		"queue drained: worker completed 3 job(s)",
	)

	// A worker that runs until it is stopped, and a producer that waits.
	ctx, stop := context.WithTimeout(context.Background(), extest.Deadline)
	defer stop()
	var (
		wg        sync.WaitGroup
		workerOut bytes.Buffer
		workerErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		workerErr = run(ctx, &workerOut, append([]string{"-mode", "worker"}, common...))
	}()
	out = extest.Run(t, run, append([]string{"-mode", "enqueue", "-n", "2", "-prefix", "b", "-wait"}, common...)...)
	stop()
	wg.Wait()
	t.Logf("worker output:\n%s", workerOut.String())
	if workerErr != nil {
		t.Fatalf("worker: %v", workerErr)
	}
	extest.Contains(t, out,
		"enqueued 2 documents on "+kind,
		"result b-1 = ", "result b-2 = ", "(worked by remote-"+kind+")",
	)
	extest.Contains(t, workerOut.String(), "worked b-1 -> ", "worked b-2 -> ")
}
