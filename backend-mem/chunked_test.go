package mem

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

// TestJobHeapAcrossChunks fills a heap over several chunks, removes
// records from the middle, re-keys some and pops the rest in order.
func TestJobHeapAcrossChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := jobHeap{slot: slotFin}
	base := time.Unix(1_700_000_000, 0).UTC()
	key := map[*jobRec]time.Time{}
	var recs []*jobRec
	for i := range 5000 {
		r := &jobRec{seq: uint64(i + 1)}
		r.init()
		at := base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		key[r] = at
		h.add(r, at)
		recs = append(recs, r)
	}
	for _, i := range rng.Perm(len(recs))[:2000] {
		h.remove(recs[i])
		delete(key, recs[i])
		if recs[i].pos[slotFin] != -1 {
			t.Fatal("removed record keeps a position")
		}
	}
	for r := range key {
		if rng.IntN(4) == 0 {
			at := base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
			key[r] = at
			h.fix(r, at)
		}
	}
	for i := range h.len() {
		if e := h.e.at(i); int(e.r.pos[slotFin]) != i {
			t.Fatalf("entry %d records position %d", i, e.r.pos[slotFin])
		}
	}
	want := make([]*jobRec, 0, len(key))
	for r := range key {
		want = append(want, r)
	}
	sort.Slice(want, func(i, k int) bool {
		a, b := want[i], want[k]
		if !key[a].Equal(key[b]) {
			return key[a].Before(key[b])
		}
		return a.seq < b.seq
	})
	for i, w := range want {
		if r := h.pop(); r != w {
			t.Fatalf("pop %d: seq %d, want seq %d", i, r.seq, w.seq)
		}
	}
	if h.len() != 0 || len(h.e.c) > 1 {
		t.Fatalf("empty heap keeps %d items in %d chunks", h.len(), len(h.e.c))
	}
}

// TestIDIndexAcrossChunks inserts ids out of order, drops most, and checks
// the order and the cursor searches.
func TestIDIndexAcrossChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var x idIndex
	jobs := map[string]*jobRec{}
	var all []string
	for i := range 3000 {
		id := string(rune('A'+i%26)) + string(rune('a'+rng.IntN(26))) + string(rune('0'+i%10)) + string(rune('a'+i/260))
		if jobs[id] != nil {
			continue
		}
		jobs[id] = &jobRec{}
		all = append(all, id)
		x.insert(id)
	}
	for _, id := range all[:2000] {
		delete(jobs, id)
		x.drop(jobs)
	}
	var live []string
	for i := range x.len() {
		if jobs[x.id(i)] != nil {
			live = append(live, x.id(i))
		}
	}
	want := slices.Sorted(func(yield func(string) bool) {
		for id := range jobs {
			if !yield(id) {
				return
			}
		}
	})
	if !slices.Equal(live, want) {
		t.Fatalf("index holds %d live ids out of order or missing, want %d", len(live), len(want))
	}
	for _, c := range []string{"", want[0], want[len(want)/2], "M", "zzz"} {
		if i := x.after(c); i < x.len() && x.id(i) <= c && c != "" {
			t.Fatalf("after(%q) = id %q", c, x.id(i))
		}
		if i := x.before(c); i >= 0 && c != "" && x.id(i) >= c {
			t.Fatalf("before(%q) = id %q", c, x.id(i))
		}
	}
}
