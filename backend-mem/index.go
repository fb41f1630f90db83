package mem

import "sort"

// idIndex is a list of job ids in ascending order, for listings. Job ids
// are time-ordered and made in increasing order, so inserting is almost
// always an append. Deleted jobs stay in the list as tombstones (a listing
// skips ids that are no longer stored) until they make up half of it, when
// the list is compacted: deletion costs O(1) amortised.
type idIndex struct {
	ids  []string
	dead int
}

// insert adds id in its sorted place.
func (x *idIndex) insert(id string) {
	n := len(x.ids)
	if n == 0 || x.ids[n-1] < id {
		x.ids = append(x.ids, id)
		return
	}
	// A concurrent Enqueue made its ids first but stored them second.
	i := sort.SearchStrings(x.ids, id)
	x.ids = append(x.ids, "")
	copy(x.ids[i+1:], x.ids[i:])
	x.ids[i] = id
}

// drop records that one id of the list was deleted from jobs, and compacts
// the list when tombstones are the majority.
func (x *idIndex) drop(jobs map[string]*jobRec) {
	x.dead++
	if x.dead < 32 || x.dead*2 < len(x.ids) {
		return
	}
	live := x.ids[:0]
	for _, id := range x.ids {
		if _, ok := jobs[id]; ok {
			live = append(live, id)
		}
	}
	clear(x.ids[len(live):])
	x.ids = live
	x.dead = 0
}

// after returns the position of the first id greater than cursor (all ids
// when cursor is empty).
func (x *idIndex) after(cursor string) int {
	if cursor == "" {
		return 0
	}
	return sort.Search(len(x.ids), func(i int) bool { return x.ids[i] > cursor })
}

// before returns the position of the last id less than cursor (the last id
// when cursor is empty), or -1.
func (x *idIndex) before(cursor string) int {
	if cursor == "" {
		return len(x.ids) - 1
	}
	return sort.SearchStrings(x.ids, cursor) - 1
}
