package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/boson-go/boson/cmd/soak"
	"maragu.dev/goqite"
	"maragu.dev/goqite/jobs"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver boson's SQLite backend uses too
)

// Goqite is the goqite peer on SQLite: a fresh database file per run in
// WAL mode with one connection, jobs created in transactions of PerCall,
// worked by a jobs.Runner with Limit concurrent jobs.
type Goqite struct {
	Dir         string
	Limit       int
	Synchronous string
	PerCall     int
}

func (g *Goqite) name() string { return "goqite " + moduleVersion("maragu.dev/goqite") }

func (g *Goqite) settings() []soak.Setting {
	return []soak.Setting{
		{Name: "driver", Value: "modernc.org/sqlite, journal_mode=WAL, busy_timeout=5000, one open connection"},
		{Name: "synchronous", Value: g.Synchronous},
		{Name: "jobs.Runner Limit", Value: strconv.Itoa(g.Limit)},
		{Name: "create", Value: fmt.Sprintf("jobs.CreateTx, %d jobs per transaction", g.PerCall)},
		{Name: "drain ends", Value: "when the queue's table is empty (every message deleted)"},
	}
}

// goqiteSchema is the table and index goqite's README asks a user to
// create, written out here because the module does not export its file.
const goqiteSchema = `
create table goqite (
	id text primary key default ('m_' || lower(hex(randomblob(16)))),
	created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
	updated text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
	queue text not null,
	body blob not null,
	timeout text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
	received integer not null default 0,
	priority integer not null default 0
) strict;
create trigger goqite_updated_timestamp after update on goqite begin
	update goqite set updated = strftime('%Y-%m-%dT%H:%M:%fZ') where id = old.id;
end;
create index goqite_queue_priority_created_idx on goqite (queue, priority desc, created);`

// Batch creates n no-op jobs in a fresh file, then runs a runner and times
// the drain until the table is empty.
func (g *Goqite) Batch(ctx context.Context, n int) (BatchFigures, error) {
	dir, err := os.MkdirTemp(g.Dir, "peers-goqite-")
	if err != nil {
		return BatchFigures{}, err
	}
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "goqite.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(" + g.Synchronous + ")"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return BatchFigures{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, goqiteSchema); err != nil {
		return BatchFigures{}, fmt.Errorf("goqite schema: %w", err)
	}
	q := goqite.New(goqite.NewOpts{DB: db, Name: "peers"})
	body := []byte(`{"seq":0}`)
	spawn, err := spawnAll(ctx, n, g.PerCall, 1, func(ctx context.Context, _, k int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for range k {
			if _, err := jobs.CreateTx(ctx, tx, q, "peers_noop", goqite.Message{Body: body}); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		return tx.Commit()
	})
	if err != nil {
		return BatchFigures{}, fmt.Errorf("goqite create: %w", err)
	}
	var done atomic.Int64
	finished := make(chan struct{})
	r := jobs.NewRunner(jobs.NewRunnerOpts{Limit: g.Limit, Queue: q})
	r.Register("peers_noop", func(context.Context, []byte) error {
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	start := time.Now()
	go func() { r.Start(runCtx); close(stopped) }()
	defer func() { stop(); <-stopped }()
	if err := awaitClosed(ctx, finished, &done, n); err != nil {
		return BatchFigures{}, fmt.Errorf("goqite: %w", err)
	}
	for {
		var left int
		if err := db.QueryRowContext(ctx, `select count(*) from goqite`).Scan(&left); err != nil {
			return BatchFigures{}, err
		}
		if left == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return BatchFigures{Spawn: rate(n, spawn), Drain: rate(n, time.Since(start))}, nil
}
