package sqliteq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// Withdraw an order and cancel the job that was shipping it in one
// transaction: a rollback leaves both, and the worker keeps its lease; a
// commit changes both, and the worker's lease is lost.
func Example_transactionalCancel() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "boson-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := sqliteq.Open(ctx, filepath.Join(dir, "app.db"), sqliteq.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if err := b.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := b.DB().ExecContext(ctx, "CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT)"); err != nil {
		log.Fatal(err)
	}
	if _, err := b.DB().ExecContext(ctx, "INSERT INTO orders VALUES (1, 'open')"); err != nil {
		log.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "shipping", Task: "ship", Payload: []byte("1")}}); err != nil {
		log.Fatal(err)
	}
	claimed, err := b.Claim(ctx, core.ClaimRequest{Queue: "shipping", WorkerID: "w1", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(claimed) != 1 {
		log.Fatal(claimed, err)
	}
	job := claimed[0]

	withdraw := func(commit bool) error {
		tx, err := b.BeginTx(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op after Commit
		if _, err := tx.ExecContext(ctx, "UPDATE orders SET status = 'withdrawn' WHERE id = 1"); err != nil {
			return err
		}
		if _, err := b.CancelTx(ctx, tx, job.ID, "order withdrawn"); err != nil {
			return err
		}
		if !commit {
			return nil // the deferred Rollback undoes both
		}
		return tx.Commit()
	}
	report := func() {
		var status string
		if err := b.DB().QueryRowContext(ctx, "SELECT status FROM orders WHERE id = 1").Scan(&status); err != nil {
			log.Fatal(err)
		}
		j, err := b.GetJob(ctx, job.ID)
		if err != nil {
			log.Fatal(err)
		}
		_, hbErr := b.Heartbeat(ctx, job.Lease, time.Minute)
		fmt.Printf("order %s, job %s, lease lost: %v\n", status, j.State, errors.Is(hbErr, core.ErrLeaseLost))
	}
	if err := withdraw(false); err != nil {
		log.Fatal(err)
	}
	report()
	if err := withdraw(true); err != nil {
		log.Fatal(err)
	}
	report()
	// Output:
	// order open, job running, lease lost: false
	// order withdrawn, job cancelled, lease lost: true
}
