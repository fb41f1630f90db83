package store

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/boson-go/boson/backend-sql/sqliteq"
)

// openSQLite opens "sqlite:PATH[?synchronous=FULL|NORMAL]". An empty path or
// ":memory:" means a temporary file deleted on Close (SQLite's own memory
// databases are private to one connection, and the backend uses several).
func openSQLite(ctx context.Context, raw, rest string, opts Options) (*Store, error) {
	path, query, _ := strings.Cut(rest, "?")
	path = strings.TrimPrefix(path, "//") // sqlite:///abs/path -> /abs/path
	params, err := url.ParseQuery(query)
	if err != nil {
		return nil, invalidURL(raw, "bad query: "+err.Error())
	}
	var o sqliteq.Options
	for k, v := range params {
		switch strings.ToLower(k) {
		case "synchronous", "sync":
			switch s := strings.ToUpper(v[0]); s {
			case "FULL":
				o.Synchronous = sqliteq.SyncFull
			case "NORMAL":
				o.Synchronous = sqliteq.SyncNormal
			default:
				return nil, invalidURL(raw, fmt.Sprintf("synchronous=%q; want FULL or NORMAL", v[0]))
			}
		default:
			return nil, invalidURL(raw, fmt.Sprintf("unknown option %q; sqlite takes synchronous", k))
		}
	}
	temp := path == "" || path == ":memory:" || opts.Isolate
	var dir string
	if temp {
		base := os.TempDir()
		if path != "" && path != ":memory:" {
			base = filepath.Dir(path)
		}
		dir, err = os.MkdirTemp(base, "boson-sqlite-")
		if err != nil {
			return nil, fmt.Errorf("sqlite: temporary directory: %w", err)
		}
		path = filepath.Join(dir, "jobs.db")
	}
	b, err := sqliteq.Open(ctx, path, o)
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s := &Store{Backend: b, Kind: "sqlite", Location: path, migrate: b.Migrate, schema: b, isolated: temp}
	if dir != "" {
		s.onClose(func() error { return os.RemoveAll(dir) })
	}
	if opts.DropOnClose && dir == "" {
		s.onClose(func() error {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
			return nil
		})
	}
	s.onClose(b.Close)
	return s, nil
}
