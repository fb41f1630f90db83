package mem

import "time"

// The slots of jobRec.pos: every heap a record can belong to has its own
// slot, in which the record keeps its position in that heap.
const (
	slotReady    = iota // the out-of-order heap of its ready lane
	slotSched           // its queue's scheduled heap
	slotLease           // the lease heap
	slotDeadline        // the deadline heap
	slotFin             // the global finished heap
	slotQueueFin        // its queue's finished heap
	nSlots
)

// noPos is the pos of a record in no heap.
var noPos = [nSlots]int32{-1, -1, -1, -1, -1, -1}

// hkey is a heap key: an instant, then the record's sequence number, which
// is unique and follows the job ids (see jobRec.seq), so that ties never
// depend on insertion order.
type hkey struct {
	sec  int64
	seq  uint64
	nsec int32
}

func keyOf(t time.Time, seq uint64) hkey {
	return hkey{sec: t.Unix(), nsec: int32(t.Nanosecond()), seq: seq}
}

func (a hkey) less(b hkey) bool {
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	return a.seq < b.seq
}

// hent is one heap entry: the key is kept next to the record so that
// sifting does not chase pointers.
type hent struct {
	k hkey
	r *jobRec
}

// jobHeap is a binary min-heap of job records by hkey that knows where each
// record sits: every record stores its position in each heap it can belong
// to (jobRec.pos[slot]), so removing or re-keying an arbitrary record costs
// O(log n) instead of a search. A position of -1 means "not in this heap".
//
// The backend keeps one jobHeap per index it needs: per queue the scheduled
// jobs (by RunAt) and the out-of-order ready jobs of each priority (by
// RunAt), and globally the running jobs by lease expiry, the active jobs by
// cancellation deadline and the terminal jobs by finish time (also per
// queue).
type jobHeap struct {
	e    chunked[hent]
	slot int
}

func (h *jobHeap) len() int { return h.e.len() }

func (h *jobHeap) set(i int, x hent) {
	*h.e.at(i) = x
	x.r.pos[h.slot] = int32(i)
}

// add inserts r under key at. r must not be in the heap already.
func (h *jobHeap) add(r *jobRec, at time.Time) { h.push(hent{k: keyOf(at, r.seq), r: r}) }

func (h *jobHeap) push(x hent) {
	h.e.push(x)
	h.up(h.e.len() - 1)
}

func (h *jobHeap) up(i int) {
	x := *h.e.at(i)
	for i > 0 {
		p := (i - 1) / 2
		e := h.e.at(p)
		if !x.k.less(e.k) {
			break
		}
		h.set(i, *e)
		i = p
	}
	h.set(i, x)
}

// down sifts the entry at i down and reports whether it moved.
func (h *jobHeap) down(i int) bool {
	n := h.e.len()
	x := *h.e.at(i)
	i0 := i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		e := h.e.at(c)
		if r := c + 1; r < n {
			if f := h.e.at(r); f.k.less(e.k) {
				c, e = r, f
			}
		}
		if !e.k.less(x.k) {
			break
		}
		h.set(i, *e)
		i = c
	}
	h.set(i, x)
	return i > i0
}

func (h *jobHeap) removeAt(i int) *jobRec {
	n := h.e.len() - 1
	r := h.e.at(i).r
	if i != n {
		h.set(i, *h.e.at(n))
	}
	h.e.pop() // also lets the record be collected once it is deleted
	if i != n && !h.down(i) {
		h.up(i)
	}
	r.pos[h.slot] = -1
	return r
}

// remove takes r out of the heap if it is there.
func (h *jobHeap) remove(r *jobRec) {
	if i := r.pos[h.slot]; i >= 0 {
		h.removeAt(int(i))
	}
}

// fix gives r, if it is in the heap, the key at.
func (h *jobHeap) fix(r *jobRec, at time.Time) {
	i := int(r.pos[h.slot])
	if i < 0 {
		return
	}
	h.e.at(i).k = keyOf(at, r.seq)
	if !h.down(i) {
		h.up(i)
	}
}

// peek returns the smallest record, or nil when the heap is empty.
func (h *jobHeap) peek() *jobRec {
	if h.e.len() == 0 {
		return nil
	}
	return h.e.at(0).r
}

// peekTime returns the smallest record and the instant of its key, or nil.
func (h *jobHeap) peekTime() (*jobRec, time.Time) {
	if h.e.len() == 0 {
		return nil, time.Time{}
	}
	e := h.e.at(0)
	return e.r, time.Unix(e.k.sec, int64(e.k.nsec)).UTC()
}

// pop removes and returns the smallest record, or nil when the heap is empty.
func (h *jobHeap) pop() *jobRec {
	if h.e.len() == 0 {
		return nil
	}
	return h.removeAt(0)
}
