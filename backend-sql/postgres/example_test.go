package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// exampleURL is the server the examples use.
func exampleURL() string {
	if u := os.Getenv("BOSON_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// Open a backend on a connection string, create its schema and tables,
// enqueue a job and claim it.
func Example_open() {
	ctx := context.Background()
	b, err := postgres.Open(ctx, exampleURL(), postgres.Options{Schema: "boson_example_open"})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	defer b.Pool().Exec(ctx, `DROP SCHEMA boson_example_open CASCADE`)
	if err := b.Migrate(ctx); err != nil { // safe on every start, from every process
		log.Fatal(err)
	}

	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "emails", Task: "send", Payload: []byte(`{"to":"ada@example.com"}`)}}); err != nil {
		log.Fatal(err)
	}
	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "emails", WorkerID: "worker-1", Limit: 10, LeaseTTL: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(jobs), jobs[0].Task, jobs[0].State, jobs[0].Attempt)
	// Output: 1 send running 1
}

// Store an application row and its follow-up job in the caller's own
// transaction: the job exists only if the transaction commits.
func Example_transactionalEnqueue() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, exampleURL())
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	b, err := postgres.New(pool, postgres.Options{Schema: "boson_example_tx"}) // the caller keeps the pool
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	defer pool.Exec(ctx, `DROP SCHEMA boson_example_tx CASCADE`)
	if err := b.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE boson_example_tx.users (email text PRIMARY KEY)`); err != nil {
		log.Fatal(err)
	}

	signUp := func(email string, fail bool) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) // a no-op after Commit
		if _, err := tx.Exec(ctx, `INSERT INTO boson_example_tx.users (email) VALUES ($1)`, email); err != nil {
			return err
		}
		if _, err := b.EnqueueTx(ctx, tx, []core.EnqueueRequest{{Queue: "emails", Task: "welcome", Payload: []byte(`"` + email + `"`)}}); err != nil {
			return err
		}
		if fail {
			return fmt.Errorf("sign-up of %s abandoned", email)
		}
		return tx.Commit(ctx)
	}
	fmt.Println(signUp("ada@example.com", false))
	fmt.Println(signUp("bob@example.com", true))

	counts, err := b.CountJobs(ctx, core.JobFilter{Queue: "emails"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("queued jobs:", counts[core.StateQueued])
	// Output:
	// <nil>
	// sign-up of bob@example.com abandoned
	// queued jobs: 1
}
