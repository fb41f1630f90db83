package sqliteq_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// Store an application row and the job that follows it up in one
// transaction: both commit, or neither does.
func Example_transactionalEnqueue() {
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
	// The application's own table lives in the same file.
	if _, err := b.DB().ExecContext(ctx, "CREATE TABLE users (email TEXT PRIMARY KEY)"); err != nil {
		log.Fatal(err)
	}

	signUp := func(email string, fail bool) error {
		tx, err := b.BeginTx(ctx) // the backend's single writer connection
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op after Commit
		if _, err := tx.ExecContext(ctx, "INSERT INTO users (email) VALUES (?)", email); err != nil {
			return err
		}
		if _, err := b.EnqueueTx(ctx, tx, []core.EnqueueRequest{{Queue: "emails", Task: "welcome", Payload: []byte(`"` + email + `"`)}}); err != nil {
			return err
		}
		if fail {
			return fmt.Errorf("sign-up of %s abandoned", email)
		}
		return tx.Commit()
	}
	fmt.Println(signUp("ada@example.com", false))
	fmt.Println(signUp("bob@example.com", true))

	counts, err := b.CountJobs(ctx, core.JobFilter{Queue: "emails"})
	if err != nil {
		log.Fatal(err)
	}
	var users int
	if err := b.DB().QueryRowContext(ctx, "SELECT count(*) FROM users").Scan(&users); err != nil {
		log.Fatal(err)
	}
	fmt.Println("users:", users, "queued jobs:", counts[core.StateQueued])
	// Output:
	// <nil>
	// sign-up of bob@example.com abandoned
	// users: 1 queued jobs: 1
}
