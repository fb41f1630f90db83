package mem

import "sort"

// idIndex is a list of job ids in ascending order, for listings, stored in
// chunks (see chunked). Enqueue makes ids in increasing order under the
// lock, so inserting is an append; a sorted insert remains for safety.
// Deleted jobs stay in the list as tombstones (a listing skips ids that are
// no longer stored) until they make up half of it, when the list is
// compacted: deletion costs O(1) amortised.
type idIndex struct {
	ids  chunked[string]
	dead int
}

func (x *idIndex) len() int { return x.ids.len() }

// id returns the id at position i.
func (x *idIndex) id(i int) string { return *x.ids.at(i) }

// insert adds id in its sorted place.
func (x *idIndex) insert(id string) {
	n := x.ids.len()
	if n == 0 || x.id(n-1) < id {
		x.ids.push(id)
		return
	}
	i := sort.Search(n, func(i int) bool { return x.id(i) >= id })
	x.ids.push("")
	for k := n; k > i; k-- {
		*x.ids.at(k) = x.id(k - 1)
	}
	*x.ids.at(i) = id
}

// drop records that one id of the list was deleted from jobs, and compacts
// the list when tombstones are the majority.
func (x *idIndex) drop(jobs map[string]*jobRec) {
	x.dead++
	if x.dead < 32 || x.dead*2 < x.ids.len() {
		return
	}
	n := 0
	for i := range x.ids.len() {
		if id := x.id(i); jobs[id] != nil {
			*x.ids.at(n) = id
			n++
		}
	}
	x.ids.truncate(n)
	x.dead = 0
}

// after returns the position of the first id greater than cursor (all ids
// when cursor is empty).
func (x *idIndex) after(cursor string) int {
	if cursor == "" {
		return 0
	}
	return sort.Search(x.ids.len(), func(i int) bool { return x.id(i) > cursor })
}

// before returns the position of the last id less than cursor (the last id
// when cursor is empty), or -1.
func (x *idIndex) before(cursor string) int {
	if cursor == "" {
		return x.ids.len() - 1
	}
	return sort.Search(x.ids.len(), func(i int) bool { return x.id(i) >= cursor }) - 1
}
