package redisq

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// refStream yields candidate jobs in a listing's order, a chunk at a time:
// a jobWalk over index ranges, or a list of candidates known up front.
type refStream interface {
	next(ctx context.Context) ([]jobRef, error)
	// ended reports that next has returned every candidate.
	ended() bool
	// position is the id of the last candidate next returned.
	position() string
}

func (w *jobWalk) ended() bool      { return w.done }
func (w *jobWalk) position() string { return w.pos }

// refList is a refStream over candidates known up front, sorted in the
// listing's order.
type refList struct {
	refs []jobRef
	last string
}

func (l *refList) next(context.Context) ([]jobRef, error) {
	n := min(len(l.refs), scanChunk)
	out := l.refs[:n]
	l.refs = l.refs[n:]
	if n > 0 {
		l.last = out[n-1].id
	}
	return out, nil
}
func (l *refList) ended() bool      { return len(l.refs) == 0 }
func (l *refList) position() string { return l.last }

// newRefList sorts refs in id order (descending when desc) and keeps those
// after pos (at pos too when incl).
func newRefList(refs []jobRef, desc bool, pos string, incl bool) *refList {
	w := jobWalk{desc: desc, pos: pos, incl: incl}
	out := refs[:0]
	for _, r := range refs {
		if w.after(r.id) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b jobRef) int {
		c := strings.Compare(a.id, b.id)
		if desc {
			c = -c
		}
		if c == 0 {
			c = strings.Compare(a.queue, b.queue)
		}
		return c
	})
	return &refList{refs: slices.CompactFunc(out, func(a, b jobRef) bool { return a == b })}
}

// terminalStates returns the terminal states among states (all of them
// when states is empty): the only ones a job that finished can be in.
func terminalStates(states []core.JobState) []core.JobState {
	var out []core.JobState
	for _, s := range core.AllStates {
		if s.Terminal() && (len(states) == 0 || slices.Contains(states, s)) {
			out = append(out, s)
		}
	}
	return out
}

// searchStream returns the candidates of a search in its order, from the
// position of its cursor: the ids it names (looked up in the id map); the
// jobs its finished range selects from each queue's done set, scored by
// finish time, when they are at most pageScanBudget; or a walk over the
// index ranges of its task or states (only terminal ones when it has a
// finished range). ok is false when nothing can match.
func (b *Backend) searchStream(ctx context.Context, s core.JobSearch, want int) (refStream, bool, error) {
	if len(s.IDs) > 0 {
		found, err := b.queuesOf(ctx, s.IDs)
		if err != nil {
			return nil, false, err
		}
		var refs []jobRef
		for id, q := range found {
			if (s.Queue == "" || q == s.Queue) && strings.HasPrefix(id, s.IDPrefix) {
				refs = append(refs, jobRef{id: id, queue: q})
			}
		}
		return newRefList(refs, s.Desc, s.Cursor, false), true, nil
	}
	qs, err := b.scope(ctx, s.Queue)
	if err != nil {
		return nil, false, err
	}
	states := s.States
	if !s.Finished.IsZero() {
		if states = terminalStates(s.States); len(states) == 0 {
			return nil, false, nil
		}
		refs, ok, err := b.finishedIn(ctx, qs, s.Finished)
		if err != nil {
			return nil, false, err
		}
		if ok {
			return newRefList(refs, s.Desc, s.Cursor, false), true, nil
		}
	}
	srcs, err := b.walkSources(ctx, qs, s.Task, states)
	if err != nil {
		return nil, false, err
	}
	return b.newJobWalk(srcs, s.IDPrefix, s.Desc, s.Cursor, false, want), true, nil
}

// finishedIn returns the terminal jobs of queues qs that finished in r
// (by the done sets, to the µs and erring wide: the caller matches
// exactly), or ok=false when they are more than pageScanBudget.
func (b *Backend) finishedIn(ctx context.Context, qs []string, r core.TimeRange) ([]jobRef, bool, error) {
	lo, hi := "-inf", "+inf"
	if !r.From.IsZero() {
		lo = strconv.FormatInt(r.From.UnixMicro()-1, 10)
	}
	if !r.To.IsZero() {
		hi = strconv.FormatInt(r.To.UnixMicro()+1, 10)
	}
	if len(qs) == 0 {
		return nil, true, nil
	}
	pipe := b.rdb.Pipeline()
	counts := make([]*redis.IntCmd, len(qs))
	for i, q := range qs {
		counts[i] = pipe.ZCount(ctx, b.ks.queueKeys(q)[kDone], lo, hi)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false, wrap("search jobs", err)
	}
	var total int64
	for _, c := range counts {
		total += c.Val()
	}
	if total > int64(pageScanBudget) {
		return nil, false, nil
	}
	pipe = b.rdb.Pipeline()
	ids := make([]*redis.StringSliceCmd, len(qs))
	for i, q := range qs {
		ids[i] = pipe.ZRangeByScore(ctx, b.ks.queueKeys(q)[kDone], &redis.ZRangeBy{Min: lo, Max: hi})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, false, wrap("search jobs", err)
	}
	var out []jobRef
	for i, c := range ids {
		for _, id := range c.Val() {
			out = append(out, jobRef{id: id, queue: qs[i]})
		}
	}
	return out, true, nil
}

// recordJob is the part of a job its record holds that a search matches.
func recordJob(r jobRef, v record) core.Job {
	return core.Job{ID: r.id, Queue: r.queue, Task: v.task, State: v.state, CreatedAt: microTime(v.created), FinishedAt: microTime(v.finished),
		LimitKey: v.limitKey, SequenceKey: v.sequenceKey}
}

// searchMatches reports whether j matches s, its limit and sequence keys
// included.
func searchMatches(s core.JobSearch, j core.Job) bool {
	return s.Matches(j) && (s.LimitKey == "" || j.LimitKey == s.LimitKey) && (s.SequenceKey == "" || j.SequenceKey == s.SequenceKey)
}

// hasSearchFields reports whether s has fields that no index range
// selects: core's, and the flow keys.
func hasSearchFields(s core.JobSearch) bool {
	return s.HasSearchFields() || s.LimitKey != "" || s.SequenceKey != ""
}

// matchSearch returns the indexes in refs of the jobs that match s and,
// when whole, the jobs, with the bytes of payloads and results it read.
// Records are matched first (all of s but the header), and only the jobs
// they pass are read whole; without whole and a header, nothing else is
// read.
func (b *Backend) matchSearch(ctx context.Context, refs []jobRef, s core.JobSearch, whole bool) ([]int, []core.Job, int, error) {
	if whole && exactRanges(s) {
		// the index ranges select by queue, task and state already
		full, size, err := b.loadJobs(ctx, refs)
		if err != nil {
			return nil, nil, 0, err
		}
		var idx []int
		var jobs []core.Job
		for i, r := range refs {
			if j, ok := full[r]; ok && searchMatches(s, j) {
				idx = append(idx, i)
				jobs = append(jobs, j)
			}
		}
		return idx, jobs, size, nil
	}
	recs, err := b.records(ctx, refs)
	if err != nil {
		return nil, nil, 0, err
	}
	bare := s
	bare.HeaderKey, bare.HeaderValue = "", ""
	var idx []int
	var pass []jobRef
	var jobs []core.Job
	for i, r := range refs {
		v, ok := recs[r]
		if !ok {
			continue
		}
		if j := recordJob(r, v); searchMatches(bare, j) {
			idx = append(idx, i)
			pass = append(pass, r)
			jobs = append(jobs, j)
		}
	}
	if !whole && s.HeaderKey == "" {
		return idx, jobs, 0, nil
	}
	full, size, err := b.loadJobs(ctx, pass)
	if err != nil {
		return nil, nil, 0, err
	}
	idx2, jobs2 := idx[:0], jobs[:0]
	for n, r := range pass {
		if j, ok := full[r]; ok && searchMatches(s, j) {
			idx2 = append(idx2, idx[n])
			jobs2 = append(jobs2, j)
		}
	}
	return idx2, jobs2, size, nil
}

// SearchJobs returns one page of the jobs matching s in id order. Queue,
// task and states select index ranges as ListJobs does, an id prefix
// narrows each range, ids are looked up in the id map, and a finished
// range reads the done sets (scored by finish time) when they select at
// most pageScanBudget jobs; headers and created ranges are matched on the
// jobs read. A call reads at most pageScanBudget candidates, and stops
// reading whole jobs (to match headers) past scanBytesBudget of payloads
// and results: when that leaves the page short, Next continues after the
// last candidate read. See core.JobSearcher.
func (b *Backend) SearchJobs(ctx context.Context, s core.JobSearch) (core.JobPage, error) {
	var page core.JobPage
	if err := b.check("search jobs"); err != nil {
		return page, err
	}
	if err := core.ValidateJobSearch(s); err != nil {
		return page, err
	}
	return b.searchPage(ctx, s)
}

// searchPage returns one page of a valid search (see SearchJobs).
func (b *Backend) searchPage(ctx context.Context, s core.JobSearch) (core.JobPage, error) {
	var page core.JobPage
	size := s.PageSize()
	st, ok, err := b.searchStream(ctx, s, size+1)
	if err != nil || !ok {
		return page, err
	}
	read, bytes := 0, 0
	for {
		refs, err := st.next(ctx)
		if err != nil {
			return core.JobPage{}, err
		}
		// a round's candidates are every one up to its last, so a call may
		// stop after any of them
		for len(refs) > 0 {
			part := refs[:min(len(refs), probeSize(s, size-len(page.Jobs)))]
			refs = refs[len(part):]
			last := st.ended() && len(refs) == 0
			idx, jobs, n, err := b.matchSearch(ctx, part, s, true)
			if err != nil {
				return core.JobPage{}, err
			}
			for m, j := range jobs {
				page.Jobs = append(page.Jobs, j)
				if len(page.Jobs) == size {
					if !last || idx[m] < len(part)-1 {
						page.Next = j.ID
					}
					return page, nil
				}
			}
			read, bytes = read+len(part), bytes+n
			if !last && (read >= pageScanBudget || bytes >= scanBytesBudget) {
				page.Next = part[len(part)-1].id
				return page, nil
			}
		}
		if st.ended() {
			return page, nil
		}
	}
}

// exactRanges reports whether the index ranges of s select exactly its
// jobs (no search field, and not both a task and states), so that a
// search need not match records before it reads jobs whole.
func exactRanges(s core.JobSearch) bool {
	return !hasSearchFields(s) && (s.Task == "" || len(s.States) == 0)
}

// probeSize is how many candidates a search reads whole at once while it
// needs left more jobs: as many when its ranges are exact, else twice as
// many, at least 16 and at most probeChunk.
func probeSize(s core.JobSearch, left int) int {
	if exactRanges(s) {
		return left
	}
	return min(max(2*left, 16), probeChunk)
}

// CountSearch counts the jobs matching s by state: by the counters, as
// CountJobs does, when s has no search field, else by reading the
// candidates SearchJobs would (records only, unless s has a header), at
// most countScanBudget of them and countScanBytes of payloads and results.
// See core.JobSearcher.
func (b *Backend) CountSearch(ctx context.Context, s core.JobSearch) (map[core.JobState]int64, error) {
	if err := b.check("count search"); err != nil {
		return nil, err
	}
	if err := core.ValidateJobSearch(s); err != nil {
		return nil, err
	}
	if !hasSearchFields(s) {
		return b.CountJobs(ctx, s.JobFilter)
	}
	s.Cursor, s.Desc = "", false
	out := map[core.JobState]int64{}
	st, ok, err := b.searchStream(ctx, s, countChunk)
	if err != nil || !ok {
		return out, err
	}
	for read, bytes := 0, 0; !st.ended(); {
		refs, err := st.next(ctx)
		if err != nil {
			return nil, err
		}
		if read += len(refs); read > countScanBudget {
			return nil, tooBroad("count search", countScanBudget)
		}
		_, jobs, n, err := b.matchSearch(ctx, refs, s, false)
		if err != nil {
			return nil, err
		}
		if bytes += n; bytes > countScanBytes {
			return nil, tooBroad("count search", read)
		}
		for _, j := range jobs {
			out[j.State]++
		}
	}
	return out, nil
}

// tooBroad is the error of a count whose filter would read more than n
// jobs.
func tooBroad(op string, n int) error {
	return fmt.Errorf("redisq: %s: the filter would read more than %d jobs; narrow it by queue, task, states, ids, id prefix or a finished range: %w", op, n, core.ErrInvalidArgument)
}
