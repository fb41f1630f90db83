package mem

import (
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
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

// TestIDIndexAcrossChunks inserts records out of id order, deletes most,
// and checks the order, find and the cursor searches, on an index that
// keeps keys and one that does not.
func TestIDIndexAcrossChunks(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		testIDIndex(t, keyed)
	}
}

func testIDIndex(t *testing.T, keyed bool) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := idIndex{keyed: keyed}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var made []string
	for range 3000 {
		made = append(made, core.NewID(at.Add(time.Duration(rng.IntN(5))*time.Millisecond)))
	}
	rng.Shuffle(len(made), func(i, k int) { made[i], made[k] = made[k], made[i] })
	jobs := map[string]*jobRec{}
	var all []*jobRec
	for i := range 3000 {
		id := made[i]
		if !keyed {
			id = string(rune('A'+i%26)) + string(rune('a'+rng.IntN(26))) + string(rune('0'+i%10)) + string(rune('a'+i/260))
		}
		if jobs[id] != nil {
			continue
		}
		r := &jobRec{id: id}
		jobs[id] = r
		all = append(all, r)
		x.insert(r)
	}
	for _, r := range all[:2000] {
		delete(jobs, r.id)
		r.deleted = true
		x.drop()
	}
	var live []string
	for i := range x.len() {
		if r := x.rec(i); !r.deleted {
			live = append(live, r.id)
		}
	}
	want := slices.Sorted(maps.Keys(jobs))
	if !slices.Equal(live, want) {
		t.Fatalf("index holds %d live ids out of order or missing, want %d", len(live), len(want))
	}
	for _, r := range all {
		if got := x.find(r.id); (got != nil) != !r.deleted || got != nil && got != r {
			t.Fatalf("find(%q) = %v, deleted %v", r.id, got, r.deleted)
		}
	}
	if x.find("nope") != nil || x.find("") != nil || x.find(strings.ToLower(want[0])) != nil {
		t.Fatal("find found an id never stored")
	}
	for _, c := range []string{"", want[0], want[len(want)/2], "M", "zzz", "01KJ"} {
		if i := x.after(c); i < x.len() && x.rec(i).id <= c && c != "" {
			t.Fatalf("after(%q) = id %q", c, x.rec(i).id)
		}
		if i := x.before(c); i >= 0 && c != "" && x.rec(i).id >= c {
			t.Fatalf("before(%q) = id %q", c, x.rec(i).id)
		}
	}
}

// TestParseIDOrder holds parseID to the order of the ids core.NewID makes
// and to rejecting every other spelling.
func TestParseIDOrder(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	prev, _ := parseID(core.NewID(at))
	for i := range 5000 {
		id := core.NewID(at.Add(time.Duration(i%3) * time.Millisecond))
		k, ok := parseID(id)
		if !ok {
			t.Fatalf("parseID(%q) failed", id)
		}
		if !prev.less(k) {
			t.Fatalf("key of %s is not above the key of the id before", id)
		}
		prev = k
	}
	a, b := core.NewID(at), core.NewID(at.Add(time.Hour))
	ka, _ := parseID(a)
	kb, _ := parseID(b)
	if !ka.less(kb) || kb.less(ka) {
		t.Fatalf("keys of %s < %s do not compare so", a, b)
	}
	for _, bad := range []string{"", "0", strings.ToLower(a), "8" + a[1:], a[:25] + "U", a + "0"} {
		if _, ok := parseID(bad); ok {
			t.Errorf("parseID(%q) accepted it", bad)
		}
	}
}
