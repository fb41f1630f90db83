package mem

import (
	"sort"

	"github.com/boson-go/boson/core"
)

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
	// The store's index of every job also keeps the ids as numbers (see
	// idKey), beside the records, so that find searches an array without
	// pointers instead of following one to a record and one to its id at
	// every step: several times faster in a store of a million jobs.
	keyed   bool
	unkeyed bool // an id did not parse: find falls back to the strings
	keys    chunked[idKey]
}

// idKey is an id of core.NewID read as the 128-bit number its 26 base-32
// digits spell: ids compare as their keys do.
type idKey struct{ hi, lo uint64 }

func (a idKey) less(b idKey) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

// crockfordDigit maps the digits of core.NewID's alphabet to their values
// and every other byte to -1.
var crockfordDigit = func() (d [256]int8) {
	for i := range d {
		d[i] = -1
	}
	for i, c := range "0123456789ABCDEFGHJKMNPQRSTVWXYZ" {
		d[c] = int8(i)
	}
	return d
}()

// parseID returns the key of id, and false when id is not spelled as
// core.NewID spells ids (then no stored id equals it).
func parseID(id string) (idKey, bool) {
	if len(id) != core.IDLength || crockfordDigit[id[0]] > 7 {
		return idKey{}, false // 26 digits hold 130 bits; ids use 128
	}
	var k idKey
	for i := 0; i < len(id); i++ {
		v := crockfordDigit[id[i]]
		if v < 0 {
			return idKey{}, false
		}
		k.hi = k.hi<<5 | k.lo>>59
		k.lo = k.lo<<5 | uint64(v)
	}
	return k, true
}

func (x *idIndex) len() int { return x.recs.len() }

// rec returns the record at position i, which may be deleted.
func (x *idIndex) rec(i int) *jobRec { return *x.recs.at(i) }

// insert adds r in its sorted place.
func (x *idIndex) insert(r *jobRec) {
	var key idKey
	if x.keyed && !x.unkeyed {
		var ok bool
		if key, ok = parseID(r.id); !ok {
			x.unkeyed = true
		}
	}
	n := x.recs.len()
	if n == 0 || x.rec(n-1).id < r.id {
		x.recs.push(r)
		if x.keyed {
			x.keys.push(key)
		}
		return
	}
	i := x.search(r.id)
	x.recs.push(nil)
	for k := n; k > i; k-- {
		*x.recs.at(k) = x.rec(k - 1)
	}
	*x.recs.at(i) = r
	if x.keyed {
		x.keys.push(idKey{})
		for k := n; k > i; k-- {
			*x.keys.at(k) = *x.keys.at(k - 1)
		}
		*x.keys.at(i) = key
	}
}

// search returns the position of the first record whose id is not less
// than id.
func (x *idIndex) search(id string) int {
	return sort.Search(x.recs.len(), func(i int) bool { return x.rec(i).id >= id })
}

// find returns the stored record of id, or nil.
func (x *idIndex) find(id string) *jobRec {
	i := 0
	if x.keyed && !x.unkeyed {
		key, ok := parseID(id)
		if !ok {
			return nil
		}
		i = sort.Search(x.keys.len(), func(i int) bool { return !x.keys.at(i).less(key) })
	} else {
		i = x.search(id)
	}
	if i < x.recs.len() {
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
			if x.keyed {
				*x.keys.at(n) = *x.keys.at(i)
			}
			n++
		}
	}
	x.recs.truncate(n)
	if x.keyed {
		x.keys.truncate(n)
	}
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
