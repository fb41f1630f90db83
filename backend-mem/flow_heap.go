package mem

// recHeap is a binary heap of job records for flow control: the jobs a
// gate holds back, in claim order, the jobs it admitted, last in claim
// order first, or the active members of a sequence, in id order. Like jobHeap it knows where each record sits (flowRec.pos at
// its slot), so a record leaves it in O(log n).
type recHeap struct {
	e    []recEnt
	slot int  // one of the flow slots
	max  bool // the largest first: the token holders of a gate
}

// The slots of flowRec.pos.
const (
	flowPark    = iota // the park heap of a gate
	flowMember         // the member heap of a sequence
	flowTokKey         // the token holders of a key gate
	flowTokTask        // the token holders of a task gate
	nFlowSlots
)

// recEnt is one entry: claim order is (prio, k), and k orders by run-at
// then by seq, which follows the ids. A member heap leaves prio and the
// instant at zero, so it orders by seq alone.
type recEnt struct {
	prio int
	k    hkey
	r    *jobRec
}

func (a *recEnt) less(b *recEnt) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return a.k.less(b.k)
}

// claimEnt is r's entry in claim order.
func claimEnt(r *jobRec) recEnt {
	return recEnt{prio: r.job.Priority, k: keyOf(r.job.RunAt, r.seq), r: r}
}

// seqEnt is r's entry in id order.
func seqEnt(r *jobRec) recEnt { return recEnt{k: hkey{seq: r.seq}, r: r} }

func (h *recHeap) len() int { return len(h.e) }

// less orders the heap: a before b.
func (h *recHeap) less(a, b *recEnt) bool {
	if h.max {
		return b.less(a)
	}
	return a.less(b)
}

func (h *recHeap) set(i int, x recEnt) {
	h.e[i] = x
	x.r.fl.pos[h.slot] = int32(i)
}

func (h *recHeap) push(x recEnt) {
	h.e = append(h.e, x)
	h.up(len(h.e) - 1)
}

func (h *recHeap) up(i int) {
	x := h.e[i]
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(&x, &h.e[p]) {
			break
		}
		h.set(i, h.e[p])
		i = p
	}
	h.set(i, x)
}

func (h *recHeap) down(i int) bool {
	n := len(h.e)
	x := h.e[i]
	i0 := i
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(&h.e[r], &h.e[c]) {
			c = r
		}
		if !h.less(&h.e[c], &x) {
			break
		}
		h.set(i, h.e[c])
		i = c
	}
	h.set(i, x)
	return i > i0
}

func (h *recHeap) removeAt(i int) *jobRec {
	n := len(h.e) - 1
	r := h.e[i].r
	if i != n {
		h.set(i, h.e[n])
	}
	h.e[n] = recEnt{}
	h.e = h.e[:n]
	if i != n && !h.down(i) {
		h.up(i)
	}
	r.fl.pos[h.slot] = -1
	if n == 0 && cap(h.e) > 64 {
		h.e = nil // release a large array once the heap drains
	}
	return r
}

// remove takes r out of the heap if it is there.
func (h *recHeap) remove(r *jobRec) {
	if i := r.fl.pos[h.slot]; i >= 0 {
		h.removeAt(int(i))
	}
}

// peek returns the smallest record, or nil.
func (h *recHeap) peek() *jobRec {
	if len(h.e) == 0 {
		return nil
	}
	return h.e[0].r
}

// pop removes and returns the smallest record, or nil.
func (h *recHeap) pop() *jobRec {
	if len(h.e) == 0 {
		return nil
	}
	return h.removeAt(0)
}
