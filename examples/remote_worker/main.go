// Command remote_worker shows separate enqueue and worker processes sharing
// one store: Postgres, Redis or NATS, chosen by the URL's scheme. The
// enqueue side holds nothing but a client; any number of workers, on any
// machines, serve the queue.
//
// Start a worker (it runs until interrupted), then enqueue from elsewhere:
//
//	go run ./examples/remote_worker -mode worker  -url redis://127.0.0.1:6379/0
//	go run ./examples/remote_worker -mode enqueue -url redis://127.0.0.1:6379/0 -n 5 -wait
//
// -url defaults to $BOSON_URL, else postgres://postgres@127.0.0.1:5432/test;
// nats://127.0.0.1:4222 works the same way. -ns picks the Postgres schema,
// Redis key prefix or NATS namespace (default "boson"). A worker started
// with -drain exits once the queue has no work left, and also reads the
// usual BOSON_WORKER_ID, BOSON_CONCURRENCY, ... environment variables.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Fingerprint hashes a document; it stands for any work a fleet does.
var Fingerprint = boson.NewTask[string, string]("fingerprint")

// queue is the queue that both sides use.
const queue = "documents"

const defaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "remote_worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("remote_worker", flag.ContinueOnError)
	mode := fs.String("mode", "", "enqueue or worker")
	url := fs.String("url", envOr("BOSON_URL", defaultURL), "store URL: postgres://, redis:// or nats://")
	ns := fs.String("ns", "boson", "Postgres schema, Redis key prefix or NATS namespace")
	n := fs.Int("n", 5, "enqueue: how many documents to enqueue")
	prefix := fs.String("prefix", "doc", "enqueue: name prefix of the documents")
	wait := fs.Bool("wait", false, "enqueue: wait for the results")
	drain := fs.Bool("drain", false, "worker: exit when the queue has no work left")
	verbose := fs.Bool("v", false, "log what the worker does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stdout = &lockedWriter{w: stdout} // handlers print from their own goroutines
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.Default()
	}
	backend, kind, closeBackend, err := openBackend(ctx, *url, *ns, logger)
	if err != nil {
		return err
	}
	defer closeBackend()

	switch *mode {
	case "enqueue":
		return enqueue(ctx, stdout, backend, kind, *n, *prefix, *wait, logger)
	case "worker":
		return work(ctx, stdout, backend, kind, *drain, logger)
	default:
		return fmt.Errorf("%w: -mode must be enqueue or worker", core.ErrInvalidArgument)
	}
}

// enqueue is the producer: a client and nothing else.
func enqueue(ctx context.Context, stdout io.Writer, b core.QueueBackend, kind string, n int, prefix string, wait bool, logger *slog.Logger) error {
	client, err := boson.NewClient(b, boson.ClientOptions{Logger: logger})
	if err != nil {
		return err
	}
	docs := make([]string, n)
	for i := range docs {
		docs[i] = fmt.Sprintf("%s-%d", prefix, i+1)
	}
	handles, err := boson.SpawnBatch(ctx, client, Fingerprint, docs, boson.WithQueue(queue))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enqueued %d documents on %s\n", len(handles), kind)
	if !wait {
		return nil
	}
	for i, h := range handles {
		sum, err := h.Wait(ctx)
		if err != nil {
			return err
		}
		runs, err := client.ListRuns(ctx, h.ID())
		if err != nil {
			return err
		}
		by := "?"
		if len(runs) > 0 {
			by = runs[len(runs)-1].WorkerID
		}
		fmt.Fprintf(stdout, "result %s = %s (worked by %s)\n", docs[i], sum, by)
	}
	return nil
}

// work is the worker process.
func work(ctx context.Context, stdout io.Writer, b core.QueueBackend, kind string, drain bool, logger *slog.Logger) error {
	opts, err := boson.WorkerOptionsFromEnv(boson.WorkerOptions{Queues: []string{queue}, Logger: logger})
	if err != nil {
		return err
	}
	w, err := boson.NewWorker(b, opts)
	if err != nil {
		return err
	}
	err = boson.Register(w, Fingerprint, func(ctx context.Context, doc string) (string, error) {
		sum := sha256.Sum256([]byte(doc))
		fp := hex.EncodeToString(sum[:4])
		fmt.Fprintf(stdout, "worked %s -> %s\n", doc, fp)
		return fp, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "worker serving queue %q on %s\n", queue, kind)
	if !drain {
		return w.Run(ctx) // until interrupted; then a graceful shutdown
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Shutdown(context.Background())
	for {
		counts, err := b.CountJobs(ctx, core.JobFilter{Queue: queue})
		if err != nil {
			return err
		}
		if counts[core.StateQueued]+counts[core.StateRunning]+counts[core.StateSleeping] == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := w.Shutdown(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "queue drained: worker completed %d job(s)\n", w.Metrics().Total.Completed)
	return nil
}

// envOr returns the environment variable key, or def when it is unset.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
