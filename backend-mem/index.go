package mem

import "sort"

// idIndex is a list of job records in ascending order of id, stored in
// chunks (see chunked). The store keeps one of every job, which is also
// how it finds a job by id (a binary search: growing a hash map of
// millions of jobs cost more than all the rest of an enqueue), and one per
// queue and per task for listings. Enqueue makes ids in increasing order
// under the lock, so inserting is an append; a sorted insert remains for
// safety. A deleted record stays in the list, marked, until the deleted
// make up half of it, when the list is compacted: deletion costs O(1)
// amortised.
type idIndex struct {
	recs chunked[*jobRec]
	dead int
}

func (x *idIndex) len() int { return x.recs.len() }

// rec returns the record at position i, which may be deleted.
func (x *idIndex) rec(i int) *jobRec { return *x.recs.at(i) }

// insert adds r in its sorted place.
func (x *idIndex) insert(r *jobRec) {
	n := x.recs.len()
	if n == 0 || x.rec(n-1).id < r.id {
		x.recs.push(r)
		return
	}
	i := x.search(r.id)
	x.recs.push(nil)
	for k := n; k > i; k-- {
		*x.recs.at(k) = x.rec(k - 1)
	}
	*x.recs.at(i) = r
}

// search returns the position of the first record whose id is not less
// than id.
func (x *idIndex) search(id string) int {
	return sort.Search(x.recs.len(), func(i int) bool { return x.rec(i).id >= id })
}

// find returns the stored record of id, or nil.
func (x *idIndex) find(id string) *jobRec {
	if i := x.search(id); i < x.recs.len() {
		if r := x.rec(i); r.id == id && !r.deleted {
			return r
		}
	}
	return nil
}

// drop records that one record of the list was deleted, and compacts the
// list when deleted records are the majority.
func (x *idIndex) drop() {
	x.dead++
	if x.dead < 32 || x.dead*2 < x.recs.len() {
		return
	}
	n := 0
	for i := range x.recs.len() {
		if r := x.rec(i); !r.deleted {
			*x.recs.at(n) = r
			n++
		}
	}
	x.recs.truncate(n)
	x.dead = 0
}

// after returns the position of the first record whose id is greater than
// cursor (all records when cursor is empty).
func (x *idIndex) after(cursor string) int {
	if cursor == "" {
		return 0
	}
	return sort.Search(x.recs.len(), func(i int) bool { return x.rec(i).id > cursor })
}

// before returns the position of the last record whose id is less than
// cursor (the last record when cursor is empty), or -1.
func (x *idIndex) before(cursor string) int {
	if cursor == "" {
		return x.recs.len() - 1
	}
	return x.search(cursor) - 1
}
