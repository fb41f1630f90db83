package mem

import (
	"container/heap"
	"time"
)

// jobHeap is a binary min-heap of job records that knows where each record
// sits. Every record stores its position in each heap it can belong to (see
// the *Idx fields of jobRec), so removing or re-ordering an arbitrary record
// costs O(log n) instead of a search. A position of -1 means "not in this
// heap".
//
// The backend keeps one jobHeap per index it needs: per queue the ready and
// the scheduled jobs, and globally the running jobs by lease expiry, the
// active jobs by cancellation deadline and the terminal jobs by finish time.
type jobHeap struct {
	items []*jobRec
	less  func(a, b *jobRec) bool
	// pos returns the field of r that holds r's position in this heap.
	pos func(r *jobRec) *int
}

// heap.Interface, used only through the methods below.

func (h *jobHeap) Len() int           { return len(h.items) }
func (h *jobHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *jobHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.pos(h.items[i]) = i
	*h.pos(h.items[j]) = j
}
func (h *jobHeap) Push(x any) {
	r := x.(*jobRec)
	*h.pos(r) = len(h.items)
	h.items = append(h.items, r)
}
func (h *jobHeap) Pop() any {
	n := len(h.items) - 1
	r := h.items[n]
	h.items[n] = nil // let the record be collected once it is deleted
	h.items = h.items[:n]
	*h.pos(r) = -1
	return r
}

// add inserts r. r must not be in the heap already.
func (h *jobHeap) add(r *jobRec) { heap.Push(h, r) }

// remove takes r out of the heap if it is there.
func (h *jobHeap) remove(r *jobRec) {
	if i := *h.pos(r); i >= 0 {
		heap.Remove(h, i)
	}
}

// fix restores the heap order after r's key changed.
func (h *jobHeap) fix(r *jobRec) {
	if i := *h.pos(r); i >= 0 {
		heap.Fix(h, i)
	}
}

// peek returns the smallest record, or nil when the heap is empty.
func (h *jobHeap) peek() *jobRec {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// pop removes and returns the smallest record, or nil when the heap is empty.
func (h *jobHeap) pop() *jobRec {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop(h).(*jobRec)
}

// The orders of the heaps. Every order ends with the job id, which is unique,
// so that ties never depend on insertion order.

// readyOrder is the claim order: priority, then run-at, then id.
func readyOrder(a, b *jobRec) bool {
	if a.job.Priority != b.job.Priority {
		return a.job.Priority < b.job.Priority
	}
	if !a.job.RunAt.Equal(b.job.RunAt) {
		return a.job.RunAt.Before(b.job.RunAt)
	}
	return a.job.ID < b.job.ID
}

// scheduledOrder orders jobs that are not yet due by due time.
func scheduledOrder(a, b *jobRec) bool {
	return timeThenID(a.job.RunAt, b.job.RunAt, a, b)
}

// leaseOrder orders running jobs by lease expiry.
func leaseOrder(a, b *jobRec) bool {
	return timeThenID(a.job.Lease.ExpiresAt, b.job.Lease.ExpiresAt, a, b)
}

// deadlineOrder orders active jobs by the instant they pass a cancellation
// deadline. The instant is cached on the record when it is filed.
func deadlineOrder(a, b *jobRec) bool {
	return timeThenID(a.deadline, b.deadline, a, b)
}

// finishedOrder orders terminal jobs by finish time, oldest first.
func finishedOrder(a, b *jobRec) bool {
	return timeThenID(a.job.FinishedAt, b.job.FinishedAt, a, b)
}

func timeThenID(ta, tb time.Time, a, b *jobRec) bool {
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.job.ID < b.job.ID
}

// Constructors binding each heap to its position field on jobRec.

func newReadyHeap() *jobHeap {
	return &jobHeap{less: readyOrder, pos: func(r *jobRec) *int { return &r.readyIdx }}
}

func newScheduledHeap() *jobHeap {
	return &jobHeap{less: scheduledOrder, pos: func(r *jobRec) *int { return &r.schedIdx }}
}

func newLeaseHeap() *jobHeap {
	return &jobHeap{less: leaseOrder, pos: func(r *jobRec) *int { return &r.leaseIdx }}
}

func newDeadlineHeap() *jobHeap {
	return &jobHeap{less: deadlineOrder, pos: func(r *jobRec) *int { return &r.deadlineIdx }}
}

func newFinishedHeap() *jobHeap {
	return &jobHeap{less: finishedOrder, pos: func(r *jobRec) *int { return &r.finIdx }}
}

func newQueueFinishedHeap() *jobHeap {
	return &jobHeap{less: finishedOrder, pos: func(r *jobRec) *int { return &r.queueFinIdx }}
}
