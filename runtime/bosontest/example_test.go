package bosontest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	boson "github.com/boson-go/boson/runtime"
	"github.com/boson-go/boson/runtime/bosontest"
)

type Signup struct{ Email string }

var (
	Welcome   = boson.NewTask[Signup, string]("welcome")
	SendEmail = boson.NewTask[string, bool]("send-email")
)

// welcomeHandler is the code under test: it waits a day, then spawns an email.
func welcomeHandler(client *boson.Client) func(context.Context, Signup) (string, error) {
	return func(ctx context.Context, s Signup) (string, error) {
		if err := boson.SleepFor(ctx, "one-day", 24*time.Hour); err != nil {
			return "", err
		}
		if _, err := boson.Spawn(ctx, client, SendEmail, "welcome "+s.Email, boson.WithQueue("mail")); err != nil {
			return "", err
		}
		return "sent", nil
	}
}

// Testing a handler directly: the first run suspends in its durable sleep;
// after the harness clock passes the wake time the next attempt spawns the
// email, which the test inspects.
func Example() {
	t := &testing.T{} // in a real test, the test's *testing.T
	ctx := context.Background()
	h := bosontest.New(t)
	handler := welcomeHandler(h.Client)

	res := bosontest.Run(ctx, h, Welcome, handler, Signup{Email: "ada@example.com"})
	fmt.Println("suspended:", res.Suspended, "for", res.WakeAt.Sub(h.Clock.Now()))

	h.Clock.Advance(24 * time.Hour)
	res = bosontest.Again(ctx, h, Welcome, handler, res)
	fmt.Println(res.Output, res.Err)
	fmt.Println(bosontest.SpawnedOf(t, h, SendEmail))
	// Output:
	// suspended: true for 24h0m0s
	// sent <nil>
	// [welcome ada@example.com]
}
