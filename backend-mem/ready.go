package mem

// readyQueue holds the due jobs of one queue in claim order: priority,
// then run-at, then id.
//
// Jobs nearly always become due in that order within one priority: an
// enqueue makes its ids and its run-at under the lock, so each new job
// sorts after the last. So each priority has a lane with a FIFO that takes
// every job that sorts after the last one it took (O(1)), and a heap for
// the rest (a scheduled job coming due, a retry, a clock moved back):
// O(log n). A claim takes the smaller of the two heads of the lowest
// non-empty lane. Removing a job from the middle of a FIFO (a cancel) leaves
// a nil that claims skip; the FIFO is compacted when those make up most of
// it.
type readyQueue struct {
	lanes []*lane // by priority, ascending
	last  *lane   // the lane of the last add, to skip the search
}

type lane struct {
	prio int
	fifo []*jobRec // fifo[head:] in claim order; nil where a job was removed
	head int
	live int  // jobs in fifo[head:]
	tail hkey // key of the job the FIFO took last
	heap jobHeap
}

// maxIdleLanes is how many empty lanes a queue keeps for reuse.
const maxIdleLanes = 8

func (rq *readyQueue) lane(prio int) *lane {
	if l := rq.last; l != nil && l.prio == prio {
		return l
	}
	i := 0
	for i < len(rq.lanes) && rq.lanes[i].prio < prio {
		i++
	}
	if i < len(rq.lanes) && rq.lanes[i].prio == prio {
		rq.last = rq.lanes[i]
		return rq.last
	}
	if n := len(rq.lanes); n >= maxIdleLanes {
		if rq.dropIdle(); len(rq.lanes) < n {
			return rq.lane(prio)
		}
	}
	l := &lane{prio: prio, heap: jobHeap{slot: slotReady}}
	rq.lanes = append(rq.lanes, nil)
	copy(rq.lanes[i+1:], rq.lanes[i:])
	rq.lanes[i] = l
	rq.last = l
	return l
}

// dropIdle forgets the empty lanes, so that a queue that saw many
// priorities does not keep them all.
func (rq *readyQueue) dropIdle() {
	keep := rq.lanes[:0]
	for _, l := range rq.lanes {
		if l.live > 0 || l.heap.len() > 0 {
			keep = append(keep, l)
		}
	}
	clear(rq.lanes[len(keep):])
	rq.lanes = keep
	rq.last = nil
}

// add files a due job.
func (rq *readyQueue) add(r *jobRec) {
	l := rq.lane(r.job.Priority)
	k := keyOf(r.job.RunAt, r.seq)
	if l.live == 0 || l.tail.less(k) {
		if l.live == 0 {
			l.reset()
		}
		r.fifo = int32(len(l.fifo))
		l.fifo = append(l.fifo, r)
		l.live++
		l.tail = k
		return
	}
	l.heap.push(hent{k: k, r: r})
}

// reset empties a lane's FIFO, releasing a large array.
func (l *lane) reset() {
	if cap(l.fifo) > 4096 {
		l.fifo = nil
	} else {
		clear(l.fifo)
		l.fifo = l.fifo[:0]
	}
	l.head = 0
}

// remove takes r out if it is filed here.
func (rq *readyQueue) remove(r *jobRec) {
	switch {
	case r.fifo >= 0:
		l := rq.lane(r.job.Priority)
		l.fifo[r.fifo] = nil
		r.fifo = -1
		l.live--
		if l.live == 0 {
			l.reset()
		} else if dead := len(l.fifo) - l.head - l.live; dead > 1024 && dead > l.live {
			l.compact()
		}
	case r.pos[slotReady] >= 0:
		rq.lane(r.job.Priority).heap.remove(r)
	}
}

// compact moves the live jobs of the FIFO to its front.
func (l *lane) compact() {
	n := 0
	for _, r := range l.fifo[l.head:] {
		if r != nil {
			r.fifo = int32(n)
			l.fifo[n] = r
			n++
		}
	}
	clear(l.fifo[n:])
	l.fifo = l.fifo[:n]
	l.head = 0
}

// pop removes and returns the first job in claim order, or nil.
func (rq *readyQueue) pop() *jobRec {
	for _, l := range rq.lanes {
		if r := l.pop(); r != nil {
			return r
		}
	}
	return nil
}

func (l *lane) pop() *jobRec {
	var f *jobRec
	if l.live > 0 {
		for l.fifo[l.head] == nil {
			l.head++
		}
		f = l.fifo[l.head]
	}
	if l.heap.len() > 0 && (f == nil || l.heap.e.at(0).k.less(keyOf(f.job.RunAt, f.seq))) {
		return l.heap.pop()
	}
	if f == nil {
		return nil
	}
	l.fifo[l.head] = nil
	l.head++
	f.fifo = -1
	l.live--
	if l.live == 0 {
		l.reset()
	} else if l.head > 1024 && l.head > len(l.fifo)/2 {
		l.compact()
	}
	return f
}
