package e2e_test

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

var runInfoScenarios = []scenario{
	// The run id a handler sees in boson.Info is the id the backend lists
	// for that run: a failed attempt, a durable sleep and the final
	// attempt each open a run, and each run's id matches its attempt's.
	{"run_id_matches_runs", func(e *env) {
		var (
			mu   sync.Mutex
			seen []boson.RunInfo
		)
		w := e.worker(nil)
		e.must(boson.Register(w, echoTask, func(ctx context.Context, n int) (int, error) {
			info, _ := boson.Info(ctx)
			mu.Lock()
			seen = append(seen, info)
			mu.Unlock()
			if info.Attempt == 1 {
				return 0, errors.New("first attempt fails")
			}
			if err := boson.SleepFor(ctx, "nap", time.Second); err != nil {
				return 0, err
			}
			return n, nil
		}))
		e.start(w)
		h, err := boson.Spawn(e.ctx, e.client, echoTask, 5, fastRetry)
		e.must(err)
		e.waitRetry(h.ID(), 1)
		j := e.waitState(h.ID(), core.StateSleeping)
		e.clock.Set(j.RunAt)
		if _, err := h.Wait(e.ctx); err != nil {
			e.Fatal(err)
		}
		rs := e.runs(h.ID())
		mu.Lock()
		defer mu.Unlock()
		if len(rs) != 3 || len(seen) != 3 {
			e.Fatalf("%d runs listed, %d attempts seen: %+v", len(rs), len(seen), rs)
		}
		for i, r := range rs {
			info := seen[i]
			if info.RunID != core.RunID(h.ID(), info.Token) || r.ID != info.RunID || r.Token != info.Token {
				e.Errorf("run %d: listed id %q token %d; the handler saw run id %q token %d", i, r.ID, r.Token, info.RunID, info.Token)
			}
		}
	}},
}
