// Command declared_queues shows queues declared at startup and a strict
// client: a spawn to a misspelt queue fails at once instead of parking a
// job no worker will claim, a second start declares nothing new, and a
// start whose settings drifted from the stored ones is told so.
//
// It runs on an embedded SQLite file and needs no server:
//
//	go run ./examples/declared_queues
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
	"github.com/boson-go/boson/examples/internal/exdb"
	boson "github.com/boson-go/boson/runtime"
)

// SendEmail sends one email.
var SendEmail = boson.NewTask[string, string]("send-email")

// queues are the application's queues, with their settings.
var queues = []core.QueueConfig{
	{Queue: "emails", RetentionTTL: 7 * 24 * time.Hour},
	{Queue: "reports", RetentionTTL: 30 * 24 * time.Hour, CleanupLimit: 500},
}

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "declared_queues:", err)
		os.Exit(1)
	}
}

// declare is what the application runs at startup.
func declare(ctx context.Context, stdout io.Writer, client *boson.Client, qs []core.QueueConfig) error {
	for _, cfg := range qs {
		stored, created, err := client.CreateQueue(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "queue %s: created=%v retention=%v\n", cfg.Queue, created, stored.RetentionTTL)
	}
	return nil
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("declared_queues", flag.ContinueOnError)
	dbPath := fs.String("db", "", "SQLite file to keep the queues in (default: a temporary file)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dbFile, removeDB, err := exdb.SQLiteFile(*dbPath, "boson-declared-")
	if err != nil {
		return err
	}
	defer removeDB()
	quiet := slog.New(slog.DiscardHandler)
	backend, err := sqliteq.Open(ctx, dbFile, sqliteq.Options{Logger: quiet})
	if err != nil {
		return err
	}
	defer backend.Close()
	if err := backend.Migrate(ctx); err != nil {
		return err
	}
	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet, StrictQueues: true})
	if err != nil {
		return err
	}

	// First start: both queues are declared.
	if err := declare(ctx, stdout, client, queues); err != nil {
		return err
	}
	// A second start (or a second process) declares nothing new.
	if err := declare(ctx, stdout, client, queues); err != nil {
		return err
	}

	// A typo in a queue name is refused before anything is stored.
	_, err = boson.Spawn(ctx, client, SendEmail, "hello", boson.WithQueue("emials"))
	if !errors.Is(err, boson.ErrQueueNotDeclared) {
		return fmt.Errorf("spawn to a misspelt queue: %v, want ErrQueueNotDeclared", err)
	}
	fmt.Fprintln(stdout, "spawn to emials: refused (queue not declared)")

	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Queues: []string{"emails"}, Logger: quiet})
	if err != nil {
		return err
	}
	if err := boson.Register(worker, SendEmail, func(ctx context.Context, to string) (string, error) {
		return "sent to " + to, nil
	}); err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())
	h, err := boson.Spawn(ctx, client, SendEmail, "ada@example.com", boson.WithQueue("emails"))
	if err != nil {
		return err
	}
	out, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "emails:", out)

	// A new release wants another retention than the one stored: the
	// start is told, and the stored config stays as it was.
	drifted := []core.QueueConfig{{Queue: "emails", RetentionTTL: 24 * time.Hour}}
	err = declare(ctx, stdout, client, drifted)
	if !errors.Is(err, boson.ErrQueueConflict) {
		return fmt.Errorf("drifted settings: %v, want ErrQueueConflict", err)
	}
	fmt.Fprintln(stdout, "drifted settings for emails: refused (queue declared with another config)")
	stored, err := client.GetQueueConfig(ctx, "emails")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "emails keeps retention=%v\n", stored.RetentionTTL)
	return nil
}
