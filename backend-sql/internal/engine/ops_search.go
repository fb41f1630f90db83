package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boson-go/boson/core"
)

// The operations capabilities of core (ops.go) on the SQL engine: job
// search, run reads across jobs, task listing and deletion. They use the
// indexes the migrations already have; backend-sql/README.md says which
// filter walks which index and which ones filter the rows walked.

var (
	_ core.JobSearcher = (*Engine)(nil)
	_ core.RunReader   = (*Engine)(nil)
	_ core.TaskLister  = (*Engine)(nil)
	_ core.JobDeleter  = (*Engine)(nil)
)

// where collects the conditions and arguments of a WHERE clause.
type where struct {
	conds []string
	args  []any
	// none is set when a condition can match no row at all.
	none bool
	// verify is set when the conditions may select rows that do not
	// match, which the caller must then check with JobSearch.Matches.
	verify bool
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// sql returns " WHERE ..." or "".
func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// inStrings renders "col is one of vals" with the list as one argument,
// so that the statement text does not depend on the number of values.
func (e *Engine) inStrings(col string, vals []string) (string, any) {
	if _, ok := e.d.(Postgres); ok {
		return col + " = ANY (?::text[])", vals
	}
	b, _ := json.Marshal(vals)
	return col + " IN (SELECT value FROM json_each(?))", string(b)
}

// instr is the dialect's "position of a substring" function; both take
// (haystack, needle) and return 0 when the needle is absent.
func (e *Engine) instr() string {
	if _, ok := e.d.(Postgres); ok {
		return "strpos"
	}
	return "instr"
}

// ceilTimeUS is the least stored microsecond value that is not before t,
// so that v >= ceilTimeUS(t) exactly when fromUS(v) is not before t (and
// v < ceilTimeUS(t) exactly when fromUS(v) is before t).
func ceilTimeUS(t time.Time) int64 {
	v := t.UnixMicro()
	if t.Nanosecond()%1000 != 0 {
		v++
	}
	return v
}

// idFloor returns the least id that core.NewID can make for a time at or
// after t: the ten digits that encode t's millisecond, which sort before
// every id with that time and after every id with an earlier one. It
// returns false for times an id cannot encode.
func idFloor(t time.Time) (string, bool) {
	ms := t.UnixMilli()
	if ms < 0 || ms >= 1<<48 {
		return "", false
	}
	const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var b [10]byte
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	return string(b[:]), true
}

// prefixEnd returns the least string greater than every string that
// starts with p, in byte (and so code point) order, or false when there
// is none. p must be valid UTF-8; the result is too.
func prefixEnd(p string) (string, bool) {
	for p != "" {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		next := r + 1
		if next == 0xD800 {
			next = 0xE000
		}
		if next <= utf8.MaxRune {
			return p + string(next), true
		}
	}
	return "", false
}

// headerNeedles returns texts of which the stored headers (the JSON
// object EncodeHeaders writes, whose keys and values are all strings)
// contain one when they hold key, with value v when withValue is set. A
// '"' right after '{' or ',' is not escaped, so it opens or closes a
// string; after a closing quote only ':', ',' or '}' can follow. So
// unless the encoded key starts with one of those, the '"' opens a key
// and the needles match whole keys and values, never part of one: exact
// reports that. (A key like ":a" can also match where a string ends in
// ',' or '{' and the next one starts with ':a'.)
func headerNeedles(key, value string, withValue bool) (needles []any, exact bool) {
	k, _ := json.Marshal(key)
	exact = len(k) > 2 && !strings.ContainsRune(":,}", rune(k[1]))
	pair := string(k) + ":"
	if !withValue {
		return []any{"{" + pair, "," + pair}, exact
	}
	v, _ := json.Marshal(value)
	pair += string(v)
	return []any{"{" + pair + ",", "{" + pair + "}", "," + pair + ",", "," + pair + "}"}, exact
}

// searchWhere renders the conditions of a validated search on the jobs
// table.
func (e *Engine) searchWhere(s core.JobSearch) *where {
	w := &where{}
	cond, args := filterWhere(s.JobFilter)
	if cond != "" {
		w.add(cond, args...)
	}
	if s.LimitKey != "" {
		w.add("limit_key = ?", s.LimitKey)
	}
	if s.SequenceKey != "" {
		w.add("sequence_key = ?", s.SequenceKey)
	}
	if s.HeaderKey != "" {
		needles, exact := headerNeedles(s.HeaderKey, s.HeaderValue, s.HeaderValue != "")
		w.verify = !exact
		alts := make([]string, len(needles))
		for i := range needles {
			alts[i] = e.instr() + "(headers, ?) > 0"
		}
		w.add("("+strings.Join(alts, " OR ")+")", needles...)
	}
	if s.IDPrefix != "" {
		if !utf8.ValidString(s.IDPrefix) || strings.ContainsRune(s.IDPrefix, 0) {
			w.none = true // no stored id holds such bytes
		} else {
			w.add("id >= ?", s.IDPrefix)
			if end, ok := prefixEnd(s.IDPrefix); ok {
				w.add("id < ?", end)
			}
		}
	}
	if len(s.IDs) > 0 {
		ids := make([]string, 0, len(s.IDs))
		for _, id := range s.IDs {
			if plausibleID(id) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			w.none = true
		} else {
			cond, arg := e.inStrings("id", ids)
			w.add(cond, arg)
		}
	}
	if !s.Created.From.IsZero() {
		w.add("created_at >= ?", ceilTimeUS(s.Created.From))
		if e.idsFollowCreated() {
			if floor, ok := idFloor(s.Created.From); ok {
				w.add("id >= ?", floor)
			}
		}
	}
	if !s.Created.To.IsZero() {
		w.add("created_at < ?", ceilTimeUS(s.Created.To))
	}
	if !s.Finished.IsZero() {
		// Only finished jobs have finished_at set; the state list names
		// the predicate of jobs_finished, so that the index can serve.
		w.add("state IN ('succeeded', 'failed', 'cancelled') AND finished_at > 0")
		if !s.Finished.From.IsZero() {
			w.add("finished_at >= ?", ceilTimeUS(s.Finished.From))
		}
		if !s.Finished.To.IsZero() {
			w.add("finished_at < ?", ceilTimeUS(s.Finished.To))
		}
	}
	return w
}

// idsFollowCreated reports whether every job's id was made from the time
// stored as its created_at, so that an id encodes a millisecond at or
// after its job's creation (core.NewID never goes back): true when the
// engine decides by a configured clock or by the process clock. With the
// Postgres server's clock, ids come from the process clock and
// created_at from the server's, and the two may disagree.
func (e *Engine) idsFollowCreated() bool {
	return e.clock != nil || !e.d.ServerClock()
}

// validCursor checks that a job cursor can be compared with ids.
func validCursor(c string) error {
	if !utf8.ValidString(c) || strings.ContainsRune(c, 0) {
		return fmt.Errorf("%w: cursor: is not a job id", core.ErrInvalidArgument)
	}
	return nil
}

// SearchJobs implements core.JobSearcher with keyset pagination on id, as
// ListJobs pages.
func (e *Engine) SearchJobs(ctx context.Context, s core.JobSearch) (core.JobPage, error) {
	if err := e.check("search jobs"); err != nil {
		return core.JobPage{}, err
	}
	if err := core.ValidateJobSearch(s); err != nil {
		return core.JobPage{}, err
	}
	if err := validCursor(s.Cursor); err != nil {
		return core.JobPage{}, err
	}
	w := e.searchWhere(s)
	if w.none {
		return core.JobPage{}, nil
	}
	size := s.PageSize()
	var jobs []core.Job
	for cursor := s.Cursor; ; {
		page, err := e.searchPage(ctx, w, s.Desc, cursor, size+1)
		if err != nil {
			return core.JobPage{}, e.wrap("search jobs", err)
		}
		for _, j := range page {
			if !w.verify || s.Matches(j) {
				jobs = append(jobs, j)
			}
		}
		if !w.verify || len(jobs) > size || len(page) <= size {
			break
		}
		cursor = page[len(page)-1].ID
	}
	var out core.JobPage
	if len(jobs) > size {
		jobs = jobs[:size]
		out.Next = jobs[size-1].ID
	}
	out.Jobs = jobs
	return out, nil
}

// searchPage reads the first n rows that w selects after cursor, in id
// order (descending when desc is set).
func (e *Engine) searchPage(ctx context.Context, w *where, desc bool, cursor string, n int) ([]core.Job, error) {
	sql, args := searchSQL(w, desc, cursor, n)
	return collectJobs(e.st.Reader().Query(ctx, e.render(sql), args...))
}

// searchSQL is the statement of searchPage, not yet rendered.
func searchSQL(w *where, desc bool, cursor string, n int) (string, []any) {
	conds, args := w.conds, w.args
	if cursor != "" {
		op := "id > ?"
		if desc {
			op = "id < ?"
		}
		conds, args = append(slices.Clip(conds), op), append(slices.Clip(args), cursor)
	}
	sql := "SELECT " + JobCols("") + " FROM {s}jobs" + (&where{conds: conds}).sql() + " ORDER BY id"
	if desc {
		sql += " DESC"
	}
	return sql + " LIMIT ?", append(slices.Clip(args), n)
}

// SearchPlan returns the store's plan (EXPLAIN without running it) of
// the statement that reads the first rows of SearchJobs(s), or a note
// when s can match no job and so runs none. It changes nothing.
func (e *Engine) SearchPlan(ctx context.Context, s core.JobSearch) (string, error) {
	if err := e.check("search plan"); err != nil {
		return "", err
	}
	if err := core.ValidateJobSearch(s); err != nil {
		return "", err
	}
	if err := validCursor(s.Cursor); err != nil {
		return "", err
	}
	w := e.searchWhere(s)
	if w.none {
		return "no statement: the search matches no job", nil
	}
	sql, args := searchSQL(w, s.Desc, s.Cursor, s.PageSize()+1)
	explain := "EXPLAIN QUERY PLAN "
	if _, ok := e.d.(Postgres); ok {
		explain = "EXPLAIN (COSTS OFF) "
	}
	var lines []string
	if err := e.planLines(ctx, e.st.Reader(), explain+e.render(sql), args, &lines); err != nil {
		return "", e.wrap("search plan", err)
	}
	return strings.Join(lines, "\n"), nil
}

// CountSearch implements core.JobSearcher.
func (e *Engine) CountSearch(ctx context.Context, s core.JobSearch) (map[core.JobState]int64, error) {
	if err := e.check("count search"); err != nil {
		return nil, err
	}
	s.Limit, s.Cursor = 0, ""
	if err := core.ValidateJobSearch(s); err != nil {
		return nil, err
	}
	out := map[core.JobState]int64{}
	w := e.searchWhere(s)
	if w.none {
		return out, nil
	}
	var err error
	if w.verify {
		err = e.scanAll(ctx, e.st.Reader(), "SELECT "+JobCols("")+" FROM {s}jobs"+w.sql(), w.args, func(rows Rows) error {
			j, err := ScanJob(rows)
			if err == nil && s.Matches(j) {
				out[j.State]++
			}
			return err
		})
	} else {
		err = e.countBy(ctx, "SELECT state, count(*) FROM {s}jobs"+w.sql()+" GROUP BY state", w.args, func(k string, n int64) {
			out[core.JobState(k)] = n
		})
	}
	if err != nil {
		return nil, e.wrap("count search", err)
	}
	return out, nil
}

// countBy reads (key, count) rows.
func (e *Engine) countBy(ctx context.Context, sql string, args []any, fn func(string, int64)) error {
	return e.scanAll(ctx, e.st.Reader(), sql, args, func(rows Rows) error {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		fn(k, n)
		return nil
	})
}

// FindByIdempotencyKey implements core.JobSearcher through the unique
// index on (queue, idempotency_key).
func (e *Engine) FindByIdempotencyKey(ctx context.Context, queue, key string) (core.Job, error) {
	if err := e.check("find by idempotency key"); err != nil {
		return core.Job{}, err
	}
	if err := core.ValidateKeyLookup(queue, key); err != nil {
		return core.Job{}, err
	}
	var jobs []core.Job
	var err error
	if _, pg := e.d.(Postgres); !pg || !strings.ContainsRune(key, 0) { // Postgres text holds no NUL
		jobs, err = collectJobs(e.st.Reader().Query(ctx, e.render("SELECT "+JobCols("")+" FROM {s}jobs WHERE queue = ? AND idempotency_key = ? AND "+heldKey+
			" AND (unique_mode <> 'by_period' OR key_expires_at > {now})"), queue, key, e.NowArg()))
	}
	if err != nil {
		return core.Job{}, e.wrap("find by idempotency key", err)
	}
	if len(jobs) == 0 {
		return core.Job{}, fmt.Errorf("boson/%s: find by idempotency key: %w: no job of queue %q holds key %q", e.d.Name(), core.ErrNotFound, queue, key)
	}
	return jobs[0], nil
}

// ListTasks implements core.TaskLister: the tasks of retained jobs
// (counted by state) and of stored configs, by name.
func (e *Engine) ListTasks(ctx context.Context) ([]core.TaskInfo, error) {
	if err := e.check("list tasks"); err != nil {
		return nil, err
	}
	byName := map[string]*core.TaskInfo{}
	get := func(name string) *core.TaskInfo {
		ti := byName[name]
		if ti == nil {
			ti = &core.TaskInfo{Name: name, Counts: map[core.JobState]int64{}}
			byName[name] = ti
		}
		return ti
	}
	r := e.st.Reader()
	err := e.scanAll(ctx, r, "SELECT task, state, count(*) FROM {s}jobs GROUP BY task, state", nil, func(rows Rows) error {
		var task, state string
		var n int64
		if err := rows.Scan(&task, &state, &n); err != nil {
			return err
		}
		get(task).Counts[core.JobState(state)] = n
		return nil
	})
	if err == nil {
		err = e.scanAll(ctx, r, "SELECT task FROM {s}task_configs", nil, func(rows Rows) error {
			var task string
			if err := rows.Scan(&task); err != nil {
				return err
			}
			get(task).HasConfig = true
			return nil
		})
	}
	if err != nil {
		return nil, e.wrap("list tasks", err)
	}
	out := make([]core.TaskInfo, 0, len(byName))
	for _, ti := range byName {
		out = append(out, *ti)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// Ops is every operations capability of core that the engine implements;
// the backends embed it to offer them.
type Ops interface {
	core.RunReader
	core.JobSearcher
	core.TaskLister
	core.JobDeleter
	core.BulkActor
	core.FlowController
	core.QueueDeclarer
	core.Awaiter
}
