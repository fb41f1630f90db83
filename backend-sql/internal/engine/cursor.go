package engine

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// Claim cursors keep the cost of a Postgres claim independent of the dead
// index entries that vacuum has not removed yet.
//
// Every claim leaves the claim index entries of the rows it claimed
// behind: they point at row versions that are dead once the claim
// commits, and only vacuum removes them (an index scan can mark them
// killed only when no snapshot can still see them, which a long
// transaction or a replica's feedback prevents). They sit at the head of
// the index in claim order, so a claim that always starts at the head
// walks all of them. A cursor remembers, per queue and process, the
// position (priority, run_at, id) of the last job it claimed, and the next
// claim starts its index scan after that position: it walks only what
// was claimed since.
//
// A job can become claimable behind a cursor. Each such case is covered:
//
//   - A write committed late (an enqueue whose run_at was read before a
//     claim passed it): the cursor never moves closer than cursorMargin to
//     the claim's clock within its priority, so a write that commits
//     within that margin lands after it.
//   - A job that this process makes claimable (enqueue, retry, sleep,
//     rescue, a manual retry): the engine notes its position, and every
//     claim from the time the job is due starts at or before it until a
//     claim that started there has run since it became due.
//   - A job that another process enqueues, retries, puts to sleep or
//     rescues: the notification carries the lowest position (and the
//     run_at span) of the jobs, which the listener notes in the same way.
//   - Everything else (a row skipped because another transaction held its
//     lock and then rolled back, a lost notification, a backend without a
//     listener, a job scheduled before this process first claimed at a
//     higher priority than the cursor's): every rescan interval the claim
//     starts at the head of the index again, and a listener that
//     reconnects resets every cursor.
//
// SQLite needs none of this: it deletes index entries as it updates.

// cursorMargin is how far behind the claim's clock a cursor stays within
// its priority, in microseconds.
const cursorMargin = int64(time.Second / time.Microsecond)

// cursorSlack is how early, in microseconds, a noted position applies
// before it is due by the process's estimate of the store's clock.
const cursorSlack = int64(2 * time.Second / time.Microsecond)

// maxCursorNotes bounds the notes kept per queue; beyond it the two notes
// closest in time merge into one that covers both.
const maxCursorNotes = 256

// rescanShare is how many times its own duration at least passes between
// two claims from the head of the index.
const rescanShare = 20

// DefaultClaimRescan is how often a claim starts at the head of the claim
// index again when the engine's configuration does not say.
const DefaultClaimRescan = 10 * time.Second

// claimPos is a position in claim order.
type claimPos struct {
	prio  int
	runAt int64
	id    string
}

func (a claimPos) less(b claimPos) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.runAt != b.runAt {
		return a.runAt < b.runAt
	}
	return a.id < b.id
}

// cursorNote says that a job at pos or after became claimable: from time
// from on, claims start at or before pos, until one that did has run at a
// time of at least until.
type cursorNote struct {
	pos         claimPos
	from, until int64
	seq         uint64
}

// queueCursor is the cursor of one queue.
type queueCursor struct {
	valid  bool // false: the next claim starts at the head
	at     claimPos
	headAt time.Time     // when a claim last started at the head
	cost   time.Duration // how long the last claim from the head took
	notes  []cursorNote
}

// claimCursors holds the cursors of one engine.
type claimCursors struct {
	rescan time.Duration // <= 0: cursors off

	mu        sync.Mutex
	queues    map[string]*queueCursor
	seq       uint64
	skew      int64 // store clock minus process clock, in microseconds
	skewKnown bool
}

func newClaimCursors(rescan time.Duration) *claimCursors {
	if rescan == 0 {
		rescan = DefaultClaimRescan
	}
	return &claimCursors{rescan: rescan, queues: map[string]*queueCursor{}}
}

// cursorStart is where one claim starts and what it saw there.
type cursorStart struct {
	head bool
	pos  claimPos
	seq  uint64 // notes up to this sequence number existed at the start
	est  int64  // the estimated store time at the start (0: unknown)
	at   time.Time
}

func (c *claimCursors) queue(name string) *queueCursor {
	q := c.queues[name]
	if q == nil {
		q = &queueCursor{}
		c.queues[name] = q
	}
	return q
}

// estimate returns the store's time as this process estimates it, in
// microseconds, or 0 when it does not know it yet. fixed is the time of a
// configured clock, when there is one.
func (c *claimCursors) estimate(fixed any) int64 {
	if v, ok := fixed.(int64); ok {
		return v
	}
	if !c.skewKnown {
		return 0
	}
	return toUS(time.Now()) + c.skew
}

// start returns where a claim of queue at now (the claim's time argument)
// starts.
func (c *claimCursors) start(queue string, now any) cursorStart {
	return c.where(queue, now, true)
}

// peek returns where the next claim of queue would start, and changes
// nothing.
func (c *claimCursors) peek(queue string, now any) cursorStart {
	return c.where(queue, now, false)
}

func (c *claimCursors) where(queue string, now any, claiming bool) cursorStart {
	if c.rescan <= 0 {
		return cursorStart{head: true}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queues[queue]
	if q == nil {
		if !claiming {
			return cursorStart{head: true}
		}
		q = c.queue(queue)
	}
	st := cursorStart{seq: c.seq, est: c.estimate(now), at: time.Now()}
	// Rescans cost a twentieth of the claims' time at most, however many
	// dead entries they walk.
	if !q.valid || time.Since(q.headAt) >= max(c.rescan, rescanShare*q.cost) {
		if claiming {
			// Concurrent claims keep the cursor while this one rescans.
			q.headAt = time.Now()
		}
		st.head = true
		return st
	}
	st.pos = q.at
	for _, n := range q.notes {
		if st.est == 0 || n.from <= st.est+cursorSlack {
			if n.pos.less(st.pos) {
				st.pos = n.pos
			}
		}
	}
	return st
}

// done records the jobs a claim of at most limit jobs that started at st
// returned. now is the claim's time argument: the configured clock's, or
// nil for the store's.
func (c *claimCursors) done(queue string, st cursorStart, now any, limit int, leaseTTL time.Duration, jobs []core.Job) {
	if c.rescan <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue(queue)
	t, known := now.(int64)
	var last claimPos
	for i, j := range jobs {
		p := claimPos{prio: j.Priority, runAt: toUS(j.RunAt), id: j.ID}
		if i == 0 || last.less(p) {
			last = p
		}
		if !known && i == 0 {
			// The claim set every lease to the store's time plus the TTL.
			t, known = toUS(j.Lease.ExpiresAt)-ceilUS(leaseTTL), true
			c.skew, c.skewKnown = t-toUS(time.Now()), true
		}
	}
	if !known && c.skewKnown {
		// Nothing claimed: the store's time was at least the estimate at
		// the start less the slack.
		t, known = st.est-cursorSlack, st.est > 0
	}
	if known {
		kept := q.notes[:0]
		for _, n := range q.notes {
			// A note is done with once a claim that started at or before
			// it, after it was made and due, scanned past it: it ran out
			// of due jobs, or claimed beyond the note's last run_at.
			passed := len(jobs) < limit || last.prio > n.pos.prio || last.prio == n.pos.prio && last.runAt > n.until
			covered := n.seq <= st.seq && (st.head || !n.pos.less(st.pos)) && n.until <= t && passed
			if !covered {
				kept = append(kept, n)
			}
		}
		q.notes = kept
	}
	if len(jobs) == 0 {
		return
	}
	if floor := (claimPos{prio: last.prio, runAt: t - cursorMargin}); floor.less(last) {
		last = floor
	}
	if st.head {
		q.at, q.valid, q.cost = last, true, time.Since(st.at)
		return
	}
	// The claim handled every due job from where it started to last (it
	// claimed them, or another claim held them). A claim that started
	// below the cursor, at a noted position, may move it back.
	if q.valid && (st.pos.less(q.at) || q.at.less(last)) {
		q.at = last
	}
}

// note records that jobs of queue at priority prio became claimable at
// run_at from and later, up to until (microseconds).
func (c *claimCursors) note(queue string, prio int, from, until int64) {
	if c.rescan <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue(queue)
	c.seq++
	q.notes = append(q.notes, cursorNote{pos: claimPos{prio: prio, runAt: from}, from: from, until: until, seq: c.seq})
	if len(q.notes) > maxCursorNotes {
		q.notes = mergeNotes(q.notes)
	}
}

// dueJob is a job that became claimable in a queue at a priority and a
// run_at (microseconds).
type dueJob struct {
	queue string
	prio  int
	runAt int64
}

// noteDue notes one job that became claimable.
func (c *claimCursors) noteDue(d dueJob) { c.note(d.queue, d.prio, d.runAt, d.runAt) }

// payload is the notification payload that names d's position, which
// Notified parses.
func (d dueJob) payload() string {
	return d.queue + " " + strconv.Itoa(d.prio) + " " + strconv.FormatInt(d.runAt, 10) + " " + strconv.FormatInt(d.runAt, 10)
}

// reset makes the next claim of queue start at the head.
func (c *claimCursors) reset(queue string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.queues[queue]; q != nil {
		q.valid, q.notes = false, nil
	}
}

// resetAll makes the next claim of every queue start at the head.
func (c *claimCursors) resetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.queues {
		q.valid, q.notes = false, nil
	}
}

// Notified handles the payload of a notification: a queue name, or (from
// an enqueue) "queue priority earliest latest", the lowest priority and
// the run_at span of the jobs it stored. It notes those jobs for the
// claim cursors and wakes the queue's local subscribers. A payload that
// does not parse only wakes.
func (e *Engine) Notified(payload string) {
	queue, rest, found := strings.Cut(payload, " ")
	if found {
		if f := strings.Fields(rest); len(f) == 3 {
			prio, err1 := strconv.Atoi(f[0])
			from, err2 := strconv.ParseInt(f[1], 10, 64)
			until, err3 := strconv.ParseInt(f[2], 10, 64)
			if err1 == nil && err2 == nil && err3 == nil && from <= until {
				e.cursors.note(queue, prio, from, until)
			}
		}
	}
	e.hub.signal(queue)
}

// ResetClaimCursors makes the next claim of every queue start at the head
// of the claim index, as after a gap in the notifications that note jobs
// of other processes.
func (e *Engine) ResetClaimCursors() { e.cursors.resetAll() }

// mergeNotes merges the two notes closest in time into one that covers
// both: it applies from the earlier time, at the lower position, until
// the later time.
func mergeNotes(notes []cursorNote) []cursorNote {
	sort.Slice(notes, func(a, b int) bool { return notes[a].from < notes[b].from })
	best := 1
	for i := 2; i < len(notes); i++ {
		if notes[i].from-notes[i-1].from < notes[best].from-notes[best-1].from {
			best = i
		}
	}
	a, b := notes[best-1], notes[best]
	m := cursorNote{pos: a.pos, from: a.from, until: max(a.until, b.until), seq: max(a.seq, b.seq)}
	if b.pos.less(m.pos) {
		m.pos = b.pos
	}
	notes[best-1] = m
	return append(notes[:best], notes[best+1:]...)
}

// noteJobs notes the new jobs of an enqueue: per queue and priority, one
// note from the earliest run_at to the latest.
func (c *claimCursors) noteJobs(res []core.EnqueueResult) {
	if c.rescan <= 0 {
		return
	}
	type key struct {
		queue string
		prio  int
	}
	spans := map[key][2]int64{}
	for _, r := range res {
		if r.Reused {
			continue
		}
		k, at := key{r.Job.Queue, r.Job.Priority}, toUS(r.Job.RunAt)
		s, ok := spans[k]
		if !ok {
			s = [2]int64{at, at}
		}
		spans[k] = [2]int64{min(s[0], at), max(s[1], at)}
	}
	for k, s := range spans {
		c.note(k.queue, k.prio, s[0], s[1])
	}
}
