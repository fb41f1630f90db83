// Command transactional_enqueue shows application state and a task
// committed together in Postgres: a signup row and its welcome-mail task
// are written in one pgx transaction. Committed, both appear and the mail
// is sent; rolled back, neither exists. Until the commit the task is
// invisible to workers, so a worker can never mail a user that does not
// exist yet.
//
// It needs PostgreSQL:
//
//	go run ./examples/transactional_enqueue -url postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//
// The URL defaults to $BOSON_POSTGRES_URL, else the one above. The example
// keeps boson's tables and its own signups table in one schema that it
// owns (-schema, default boson_example_tx): it recreates the schema on
// every run and drops it at the end unless -keep is given.
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

	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"github.com/jackc/pgx/v5"
)

// Signup is the input of the welcome mail.
type Signup struct {
	UserID int64  `json:"user_id"`
	Email  string `json:"email"`
}

// SendWelcome mails a new user.
var SendWelcome = boson.NewTask[Signup, string]("send-welcome")

// defaultURL is the Postgres of a developer machine.
const defaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func main() {
	if err := run(context.Background(), os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "transactional_enqueue:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout io.Writer, args []string) error {
	fs := flag.NewFlagSet("transactional_enqueue", flag.ContinueOnError)
	url := fs.String("url", envOr("BOSON_POSTGRES_URL", defaultURL), "PostgreSQL connection string")
	schema := fs.String("schema", "boson_example_tx", "schema for boson's tables and the example's signups table")
	keep := fs.Bool("keep", false, "keep the schema at the end, to look at it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	backend, err := postgres.Open(ctx, *url, postgres.Options{Schema: *schema, Logger: quiet})
	if err != nil {
		return err
	}
	defer backend.Close()
	pool := backend.Pool() // the application shares the backend's pool
	dropSchema := "DROP SCHEMA IF EXISTS " + pgx.Identifier{*schema}.Sanitize() + " CASCADE"
	if _, err := pool.Exec(ctx, dropSchema); err != nil { // a fresh start on every run
		return err
	}
	if err := backend.Migrate(ctx); err != nil {
		return err
	}
	signups := pgx.Identifier{*schema, "signups"}.Sanitize()
	if !*keep {
		defer func() { _, _ = pool.Exec(context.Background(), dropSchema) }()
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+signups+` (
		id bigserial PRIMARY KEY, email text NOT NULL UNIQUE)`); err != nil {
		return err
	}

	client, err := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	if err != nil {
		return err
	}
	worker, err := boson.NewWorker(backend, boson.WorkerOptions{Logger: quiet})
	if err != nil {
		return err
	}
	err = boson.Register(worker, SendWelcome, func(ctx context.Context, s Signup) (string, error) {
		// The row is there: it committed with the task.
		var email string
		if err := pool.QueryRow(ctx, `SELECT email FROM `+signups+` WHERE id = $1`, s.UserID).Scan(&email); err != nil {
			return "", boson.Permanent(fmt.Errorf("user %d: %w", s.UserID, err))
		}
		return "welcome mail sent to " + email, nil
	})
	if err != nil {
		return err
	}
	if err := worker.Start(ctx); err != nil {
		return err
	}
	defer worker.Shutdown(context.Background())

	// signup inserts the user and spawns the mail in one transaction, and
	// commits only when fail is nil.
	signup := func(email string, fail error) (*boson.Handle[string], error) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback(ctx) // a no-op after Commit
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO `+signups+` (email) VALUES ($1) RETURNING id`, email).Scan(&id); err != nil {
			return nil, err
		}
		h, err := boson.SpawnTx(ctx, client, tx, SendWelcome, Signup{UserID: id, Email: email},
			boson.WithIdempotencyKey(fmt.Sprintf("welcome-%d", id)))
		if err != nil {
			return nil, err
		}
		// Outside the transaction the task does not exist yet.
		_, err = client.GetJob(ctx, h.ID())
		fmt.Fprintf(stdout, "%s: user %d and task spawned in the transaction; visible outside before commit: %v\n",
			email, id, !errors.Is(err, core.ErrNotFound))
		if fail != nil {
			fmt.Fprintf(stdout, "%s: %v, rolling back\n", email, fail)
			return h, tx.Rollback(ctx)
		}
		fmt.Fprintf(stdout, "%s: committing\n", email)
		return h, tx.Commit(ctx)
	}

	committed, err := signup("ada@example.com", nil)
	if err != nil {
		return err
	}
	msg, err := committed.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "ada@example.com: %s\n", msg)

	rolledBack, err := signup("bob@example.com", errors.New("fraud check rejected the card"))
	if err != nil {
		return err
	}
	_, err = client.GetJob(ctx, rolledBack.ID())
	var bobs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+signups+` WHERE email = $1`, "bob@example.com").Scan(&bobs); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bob@example.com: after rollback the task exists: %v, the user exists: %v\n",
		!errors.Is(err, core.ErrNotFound), bobs > 0)

	counts, err := client.CountJobs(ctx, core.JobFilter{Task: SendWelcome.Name()})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "done: %d welcome task(s) succeeded, %d stored in all\n", counts[core.StateSucceeded], sum(counts))
	return nil
}

func sum(m map[core.JobState]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// envOr returns the environment variable key, or def when it is unset.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
