package engine

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

func cursorJob(id string, prio int, runAt int64) core.Job {
	return core.Job{ID: id, Queue: "q", Priority: prio, RunAt: fromUS(runAt)}
}

// TestCursorFollowsClaims: the first claim starts at the head, the next
// after the last job claimed, never closer than the margin to the clock.
func TestCursorFollowsClaims(t *testing.T) {
	c := newClaimCursors(time.Hour)
	now := int64(100_000_000)
	st := c.start("q", now)
	if !st.head {
		t.Fatalf("first claim starts at %+v, want the head", st)
	}
	c.done("q", st, now, 2, time.Minute, []core.Job{cursorJob("a", 0, 1_000), cursorJob("b", 0, 2_000)})
	st = c.start("q", now)
	if want := (claimPos{prio: 0, runAt: 2_000, id: "b"}); st.head || st.pos != want {
		t.Fatalf("second claim starts at %+v, want after %+v", st, want)
	}
	// A job claimed within the margin: the cursor stays the margin behind.
	c.done("q", st, now, 1, time.Minute, []core.Job{cursorJob("c", 0, now-10)})
	if st = c.start("q", now); st.pos != (claimPos{prio: 0, runAt: now - cursorMargin}) {
		t.Fatalf("claim starts at %+v, want the margin behind the clock", st)
	}
	c.reset("q")
	if st = c.start("q", now); !st.head {
		t.Fatalf("claim after reset starts at %+v, want the head", st)
	}
}

// TestCursorNotes: a note of a job before the cursor moves the start back
// once it is due, and goes when a claim from there ran out of jobs.
func TestCursorNotes(t *testing.T) {
	c := newClaimCursors(time.Hour)
	now := int64(100_000_000)
	c.done("q", c.start("q", now), now, 1, time.Minute, []core.Job{cursorJob("a", 5, 1_000)})
	due := now + 10*cursorSlack
	c.noteDue(dueJob{queue: "q", prio: -1, runAt: due})
	if st := c.start("q", now); st.pos.prio != 5 {
		t.Fatalf("claim before the note is due starts at %+v, want the cursor", st)
	}
	st := c.start("q", due)
	if want := (claimPos{prio: -1, runAt: due}); st.pos != want {
		t.Fatalf("claim once the note is due starts at %+v, want %+v", st, want)
	}
	c.done("q", st, due, 10, time.Minute, []core.Job{cursorJob("n", -1, due)})
	if n := len(c.queues["q"].notes); n != 0 {
		t.Fatalf("%d notes left after a claim ran past them", n)
	}
}

// TestCursorNoteSurvivesShortClaim: a claim that stopped at its limit
// within a noted span keeps the note, and the next claim starts at it
// again.
func TestCursorNoteSurvivesShortClaim(t *testing.T) {
	c := newClaimCursors(time.Hour)
	now := int64(100_000_000)
	c.done("q", c.start("q", now), now, 1, time.Minute, []core.Job{cursorJob("a", 5, 1_000)})
	c.note("q", 3, 5_000, 9_000)
	st := c.start("q", now)
	if want := (claimPos{prio: 3, runAt: 5_000}); st.pos != want {
		t.Fatalf("claim starts at %+v, want %+v", st, want)
	}
	c.done("q", st, now, 1, time.Minute, []core.Job{cursorJob("x", 3, 5_000)})
	if n := len(c.queues["q"].notes); n != 1 {
		t.Fatalf("%d notes after a full claim that stopped within the noted span, want 1", n)
	}
	if st := c.start("q", now); st.pos != (claimPos{prio: 3, runAt: 5_000}) {
		t.Fatalf("next claim starts at %+v, want the note again", st)
	}
}

// TestMergeNotesCovers: merged notes start no later and end no earlier
// than the notes they replace.
func TestMergeNotesCovers(t *testing.T) {
	c := newClaimCursors(time.Hour)
	c.done("q", c.start("q", int64(1)), int64(1), 1, time.Minute, []core.Job{cursorJob("a", 0, 1)})
	for i := range maxCursorNotes + 10 {
		c.note("q", i%3, int64(1000+i*10), int64(1000+i*10))
	}
	notes := c.queues["q"].notes
	if len(notes) != maxCursorNotes {
		t.Fatalf("%d notes, want %d", len(notes), maxCursorNotes)
	}
	for i := range maxCursorNotes + 10 {
		at, covered := int64(1000+i*10), false
		for _, n := range notes {
			if n.from <= at && at <= n.until && !(claimPos{prio: i % 3, runAt: at}).less(n.pos) {
				covered = true
			}
		}
		if !covered {
			t.Fatalf("job %d (priority %d, run_at %d) is covered by no note", i, i%3, at)
		}
	}
}

// TestNotifiedParses: a payload with a position notes it; a bare queue or
// a malformed payload only wakes.
func TestNotifiedParses(t *testing.T) {
	e := New(Config{Dialect: Postgres{}, PollInterval: -1})
	defer e.hub.close()
	e.cursors.done("q", e.cursors.start("q", int64(1)), int64(1), 1, time.Minute, []core.Job{cursorJob("a", 0, 1)})
	for _, p := range []string{"q", "q 1 2", "q x 1 2", "q 1 3 2", "q 1 2 3 4"} {
		e.Notified(p)
	}
	if n := len(e.cursors.queues["q"].notes); n != 0 {
		t.Fatalf("%d notes from malformed payloads", n)
	}
	e.Notified("q -2 50 70")
	notes := e.cursors.queues["q"].notes
	if len(notes) != 1 || notes[0].pos != (claimPos{prio: -2, runAt: 50}) || notes[0].until != 70 {
		t.Fatalf("notes %+v, want one at (-2, 50) until 70", notes)
	}
	if d := (dueJob{queue: "q", prio: -4, runAt: 9}); d.payload() != "q -4 9 9" {
		t.Fatalf("payload %q", d.payload())
	}
}
