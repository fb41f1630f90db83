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
	e    []hent
	slot int
}

func (h *jobHeap) len() int { return len(h.e) }

func (h *jobHeap) set(i int, x hent) {
	h.e[i] = x
	x.r.pos[h.slot] = int32(i)
}

// add inserts r under key at. r must not be in the heap already.
func (h *jobHeap) add(r *jobRec, at time.Time) {
	h.e = append(h.e, hent{k: keyOf(at, r.seq), r: r})
	h.up(len(h.e) - 1)
}

func (h *jobHeap) up(i int) {
	x := h.e[i]
	for i > 0 {
		p := (i - 1) / 2
		if !x.k.less(h.e[p].k) {
			break
		}
		h.set(i, h.e[p])
		i = p
	}
	h.set(i, x)
}

// down sifts the entry at i down and reports whether it moved.
func (h *jobHeap) down(i int) bool {
	n := len(h.e)
	x := h.e[i]
	i0 := i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.e[r].k.less(h.e[c].k) {
			c = r
		}
		if !h.e[c].k.less(x.k) {
			break
		}
		h.set(i, h.e[c])
		i = c
	}
	h.set(i, x)
	return i > i0
}

func (h *jobHeap) removeAt(i int) *jobRec {
	n := len(h.e) - 1
	r := h.e[i].r
	if i != n {
		h.set(i, h.e[n])
	}
	h.e[n] = hent{} // let the record be collected once it is deleted
	h.e = h.e[:n]
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
	h.e[i].k = keyOf(at, r.seq)
	if !h.down(i) {
		h.up(i)
	}
}

// peek returns the smallest record, or nil when the heap is empty.
func (h *jobHeap) peek() *jobRec {
	if len(h.e) == 0 {
		return nil
	}
	return h.e[0].r
}

// peekTime returns the smallest record and the instant of its key, or nil.
func (h *jobHeap) peekTime() (*jobRec, time.Time) {
	if len(h.e) == 0 {
		return nil, time.Time{}
	}
	k := h.e[0].k
	return h.e[0].r, time.Unix(k.sec, int64(k.nsec)).UTC()
}

// pop removes and returns the smallest record, or nil when the heap is empty.
func (h *jobHeap) pop() *jobRec {
	if len(h.e) == 0 {
		return nil
	}
	return h.removeAt(0)
}
