package natsq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go/jetstream"
)

// Compaction. A snapshot is a replica's whole state at one log position S,
// stored as object "state-S-<id>" in the object store BOSON_<ns>_snap. The key
// "snapshot" of the key-value bucket BOSON_<ns>_meta points at the newest
// one; it only ever moves forward, by revision compare-and-set. Once it
// points at S, the log below S+1-CompactKeep is purged. A new replica
// loads the snapshot the pointer names and consumes the log from S+1; a
// replica that was so far behind that its next command was purged sees the
// gap in the sequence and reloads from the newest snapshot, which by then
// covers the gap.

// A snapshot of a state that holds waits has version 2 (awaitSnapshotVersion),
// which a version before fan-in refuses to load instead of losing the
// waits; any other snapshot has version 1, which every version loads.
const (
	snapshotVersion      = 1
	awaitSnapshotVersion = 2
	pointerKey           = "snapshot"
)

func metaBucket(ns string) string { return "BOSON_" + ns + "_meta" }
func snapBucket(ns string) string { return "BOSON_" + ns + "_snap" }

type snapJob struct {
	Job         core.Job          `json:"job"`
	Runs        []core.Run        `json:"runs,omitempty"`
	Checkpoints []core.Checkpoint `json:"checkpoints,omitempty"`
	// HoldsSequence: the job failed and holds its sequence.
	HoldsSequence bool `json:"holds_sequence,omitempty"`
	// KeyHolder: the job is the entry of its idempotency key (see
	// flow_unique.go).
	KeyHolder bool `json:"key_holder,omitempty"`
}

type snapshotDoc struct {
	Version      int                `json:"version"`
	Applied      uint64             `json:"applied"`
	LastTS       time.Time          `json:"last_ts"`
	Jobs         []snapJob          `json:"jobs"`
	TaskConfigs  []core.TaskConfig  `json:"task_configs,omitempty"`
	QueueConfigs []core.QueueConfig `json:"queue_configs,omitempty"`
	Parts        map[uint64][]byte  `json:"parts,omitempty"`
	// Declared names the declared queues (absent in snapshots written
	// before declarations existed).
	Declared []string `json:"declared,omitempty"`
	// KeyHolders says that the jobs' KeyHolder flags name the key
	// entries. Snapshots of versions before the unique modes lack it: a
	// key was then held by the one job that carried it.
	KeyHolders bool `json:"key_holders,omitempty"`
	// Starts are the start counters of the second RateSec.
	Starts *snapStarts `json:"starts,omitempty"`
	// Waits are the jobs' latest waits, by job id (version 2).
	Waits []snapWait `json:"waits,omitempty"`
}

// snapWait is one wait and the awaited ids it has not counted, in request
// order: the edges, which decoding rebuilds.
type snapWait struct {
	Wait core.Wait `json:"wait"`
	Open []string  `json:"open,omitempty"`
}

// snapStarts holds the start counters of one second.
type snapStarts struct {
	RateSec int64          `json:"sec"`
	Tasks   map[string]int `json:"tasks,omitempty"`
	Keys    []snapKeyCount `json:"keys,omitempty"`
}

type snapKeyCount struct {
	Task string `json:"task"`
	Key  string `json:"key"`
	N    int    `json:"n"`
}

type snapPointer struct {
	Seq    uint64 `json:"seq"`
	Object string `json:"object"`
}

// encodeSnapshot serialises the state. The caller holds the lock.
func (s *state) encodeSnapshot() ([]byte, error) {
	doc := snapshotDoc{Version: snapshotVersion, Applied: s.applied, LastTS: s.lastTS, Parts: s.parts, KeyHolders: true}
	doc.Starts = s.flow.snapshotStarts()
	doc.Jobs = make([]snapJob, 0, len(s.jobs))
	s.ids.Ascend(func(id string) bool {
		r := s.jobs[id]
		sj := snapJob{Job: r.job, Runs: r.runs, HoldsSequence: r.holdsSeq}
		if k := r.job.IdempotencyKey; k != "" && s.idem[idemKey{r.job.Queue, k}] == r {
			sj.KeyHolder = true
		}
		for _, cp := range r.checkpoints {
			sj.Checkpoints = append(sj.Checkpoints, cp)
		}
		doc.Jobs = append(doc.Jobs, sj)
		return true
	})
	for _, c := range s.taskCfg {
		doc.TaskConfigs = append(doc.TaskConfigs, c)
	}
	for _, c := range s.queueCfg {
		doc.QueueConfigs = append(doc.QueueConfigs, c)
	}
	for q := range s.declared {
		doc.Declared = append(doc.Declared, q)
	}
	if len(s.waits) > 0 {
		doc.Version = awaitSnapshotVersion
		ids := make([]string, 0, len(s.waits))
		for id := range s.waits {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		doc.Waits = make([]snapWait, 0, len(ids))
		for _, id := range ids {
			w := s.waits[id]
			sw := snapWait{Wait: w.wait}
			for _, child := range w.wait.JobIDs {
				if _, ok := w.open[child]; ok {
					sw.Open = append(sw.Open, child)
				}
			}
			doc.Waits = append(doc.Waits, sw)
		}
	}
	return json.Marshal(doc)
}

// decodeSnapshot rebuilds a state, with every index, from a snapshot.
func decodeSnapshot(data []byte) (*state, error) {
	var doc snapshotDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("natsq: %w: snapshot cannot be decoded: %v", core.ErrInvalidState, err)
	}
	if doc.Version != snapshotVersion && doc.Version != awaitSnapshotVersion {
		return nil, fmt.Errorf("natsq: %w: snapshot version %d", core.ErrUnsupported, doc.Version)
	}
	s := newState()
	s.applied = doc.Applied
	s.lastTS = doc.LastTS
	s.now = doc.LastTS
	for _, c := range doc.TaskConfigs {
		s.taskCfg[c.Task] = c
	}
	for _, c := range doc.QueueConfigs {
		s.queueCfg[c.Queue] = c
	}
	s.flow.restoreStarts(doc.Starts)
	var holders []*jobRec
	for _, sj := range doc.Jobs {
		r := &jobRec{job: sj.Job, runs: sj.Runs, holdsSeq: sj.HoldsSequence}
		if sj.KeyHolder {
			holders = append(holders, r)
		}
		if len(sj.Checkpoints) > 0 {
			r.checkpoints = make(map[string]core.Checkpoint, len(sj.Checkpoints))
			for _, cp := range sj.Checkpoints {
				r.checkpoints[cp.Step] = cp
			}
		}
		s.insertRec(r)
	}
	if doc.KeyHolders {
		clear(s.idem)
		for _, r := range holders {
			s.idem[idemKey{r.job.Queue, r.job.IdempotencyKey}] = r
		}
	}
	for _, q := range doc.Declared {
		s.declared[q] = true
	}
	if err := s.restoreWaits(doc.Waits); err != nil {
		return nil, err
	}
	if doc.Parts != nil {
		s.parts = doc.Parts
	}
	clear(s.touched)
	return s, nil
}

// snapshotStores opens, or with create creates, the pointer bucket and the
// object store of the namespace, and checks that the server kept their
// replica count.
func (b *Backend) snapshotStores(ctx context.Context, create bool) (jetstream.KeyValue, jetstream.ObjectStore, error) {
	ns := b.opts.Namespace
	kv, err := b.js.KeyValue(ctx, metaBucket(ns))
	if errors.Is(err, jetstream.ErrBucketNotFound) && create {
		kv, err = b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: metaBucket(ns), History: 1,
			Storage: jetstream.FileStorage, Replicas: b.opts.Replicas, Description: "boson snapshot pointer"})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("natsq: bucket %s: %w", metaBucket(ns), err)
	}
	obs, err := b.js.ObjectStore(ctx, snapBucket(ns))
	if errors.Is(err, jetstream.ErrBucketNotFound) && create {
		obs, err = b.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: snapBucket(ns),
			Storage: jetstream.FileStorage, Replicas: b.opts.Replicas, Description: "boson snapshots"})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("natsq: object store %s: %w", snapBucket(ns), err)
	}
	if create {
		ks, err := kv.Status(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("natsq: bucket %s status: %w", metaBucket(ns), err)
		}
		os, err := obs.Status(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("natsq: object store %s status: %w", snapBucket(ns), err)
		}
		if ks.Config().Replicas != b.opts.Replicas || os.Replicas() != b.opts.Replicas {
			return nil, nil, fmt.Errorf("natsq: %w: snapshot buckets have %d and %d replicas, want %d",
				core.ErrUnsupported, ks.Config().Replicas, os.Replicas(), b.opts.Replicas)
		}
	}
	return kv, obs, nil
}

func readPointer(ctx context.Context, kv jetstream.KeyValue) (snapPointer, uint64, error) {
	e, err := kv.Get(ctx, pointerKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return snapPointer{}, 0, nil
	}
	if err != nil {
		return snapPointer{}, 0, fmt.Errorf("natsq: read snapshot pointer: %w", err)
	}
	var p snapPointer
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		return snapPointer{}, 0, fmt.Errorf("natsq: decode snapshot pointer: %w", err)
	}
	return p, e.Revision(), nil
}

// loadSnapshot returns the state of the newest snapshot, or nil when the
// namespace has none.
func (b *Backend) loadSnapshot(ctx context.Context) (*state, error) {
	kv, obs, err := b.snapshotStores(ctx, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		p, _, err := readPointer(ctx, kv)
		if err != nil || p.Seq == 0 {
			return nil, err
		}
		data, err := obs.GetBytes(ctx, p.Object)
		if errors.Is(err, jetstream.ErrObjectNotFound) && attempt < 5 {
			continue // a newer compaction replaced it in the meantime
		}
		if err != nil {
			return nil, fmt.Errorf("natsq: read snapshot %s: %w", p.Object, err)
		}
		st, err := decodeSnapshot(data)
		if err != nil {
			return nil, err
		}
		if st.applied != p.Seq {
			return nil, fmt.Errorf("natsq: snapshot %s holds position %d", p.Object, st.applied)
		}
		return st, nil
	}
}

// Compact stores a snapshot of this replica's state, moves the namespace's
// snapshot pointer to it, and purges the commands that the snapshot and the
// CompactKeep commands below it make unnecessary. It returns the log
// position the newest snapshot covers. Compacting from several processes
// at once is safe: the pointer only moves forward, and only what the
// pointer's snapshot covers is purged. The Backend compacts by itself
// every CompactEvery commands; Compact is for doing it now.
func (b *Backend) Compact(ctx context.Context) (uint64, error) {
	return b.compact(ctx, 0)
}

// compact takes a snapshot unless the newest one is fewer than minGap
// commands behind this replica.
func (b *Backend) compact(ctx context.Context, minGap uint64) (uint64, error) {
	if err := b.isClosed(); err != nil {
		return 0, err
	}
	kv, obs, err := b.snapshotStores(ctx, true)
	if err != nil {
		return 0, err
	}
	p, rev, err := readPointer(ctx, kv)
	if err != nil {
		return 0, err
	}
	b.mu.RLock()
	seq := b.st.applied
	if seq <= p.Seq+minGap {
		b.mu.RUnlock()
		b.noteSnapshot(p.Seq)
		return p.Seq, nil
	}
	data, err := b.st.encodeSnapshot()
	b.mu.RUnlock()
	if err != nil {
		return 0, fmt.Errorf("natsq: encode snapshot: %w", err)
	}
	// The name is unique even when two processes snapshot the same
	// position, so that the loser of the pointer race deletes only its own.
	name := "state-" + strconv.FormatUint(seq, 10) + "-" + core.NewID(time.Now())
	if _, err := obs.PutBytes(ctx, name, data); err != nil {
		return 0, fmt.Errorf("natsq: store snapshot: %w", err)
	}
	val, _ := json.Marshal(snapPointer{Seq: seq, Object: name})
	for {
		if rev == 0 {
			_, err = kv.Create(ctx, pointerKey, val)
		} else {
			_, err = kv.Update(ctx, pointerKey, val, rev)
		}
		if err == nil {
			break
		}
		// Another process moved the pointer first.
		p, rev, err = readPointer(ctx, kv)
		if err != nil {
			return 0, err
		}
		if p.Seq >= seq {
			_ = obs.Delete(ctx, name)
			b.noteSnapshot(p.Seq)
			return p.Seq, nil
		}
	}
	b.noteSnapshot(seq)
	keep := uint64(b.opts.CompactKeep)
	if seq+1 > keep+1 {
		if err := b.stream.Purge(ctx, jetstream.WithPurgeSequence(seq+1-keep)); err != nil {
			return seq, fmt.Errorf("natsq: purge log below %d: %w", seq+1-keep, err)
		}
	}
	if infos, err := obs.List(ctx); err == nil {
		for _, oi := range infos {
			n, err := strconv.ParseUint(strings.SplitN(strings.TrimPrefix(oi.Name, "state-"), "-", 2)[0], 10, 64)
			if err == nil && n < seq {
				_ = obs.Delete(ctx, oi.Name)
			}
		}
	}
	b.log.Debug("compacted the command log", "snapshot", seq, "bytes", len(data))
	return seq, nil
}

func (b *Backend) noteSnapshot(seq uint64) {
	for {
		cur := b.lastSnap.Load()
		if seq <= cur || b.lastSnap.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// maybeCompact starts a background compaction when CompactEvery commands
// were appended since the newest snapshot this Backend knows of.
func (b *Backend) maybeCompact(seq uint64) {
	every := b.opts.CompactEvery
	if every <= 0 || seq < b.lastSnap.Load()+uint64(every) || !b.compacting.CompareAndSwap(false, true) {
		return
	}
	b.bgMu.Lock()
	defer b.bgMu.Unlock()
	if b.isClosed() != nil {
		b.compacting.Store(false)
		return
	}
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		defer b.compacting.Store(false)
		tctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
		defer stop()
		ctx, cancel := b.untilClosed(tctx)
		defer cancel()
		if _, err := b.compact(ctx, uint64(every)); err != nil && b.isClosed() == nil {
			b.log.Warn("compacting the command log failed", "err", err)
		}
	}()
}

// reloadLocked replaces the state with the newest snapshot after the
// consumer skipped commands that compaction purged. The caller holds mu.
func (b *Backend) reloadLocked(next uint64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := b.loadSnapshot(ctx)
	if err == nil && (st == nil || st.applied+1 < next) {
		err = fmt.Errorf("the newest snapshot does not reach position %d", next-1)
	}
	if err != nil {
		b.failStopLocked(fmt.Errorf("natsq: %w: this replica missed commands that were compacted away (%v); open a new Backend", core.ErrInvalidState, err))
		return false
	}
	b.log.Warn("replica fell behind a compaction and reloaded a snapshot", "snapshot", st.applied, "next", next)
	b.st = st
	b.lastTSAt = time.Now()
	b.noteSnapshot(st.applied)
	b.notify.signalAll()
	close(b.applyCh)
	b.applyCh = make(chan struct{})
	return true
}

// restoreWaits rebuilds the waits and their edges from a snapshot's.
func (s *state) restoreWaits(waits []snapWait) error {
	for _, sw := range waits {
		id := sw.Wait.JobID
		if _, dup := s.waits[id]; dup || s.jobs[id] == nil || len(sw.Open) != sw.Wait.Pending {
			return fmt.Errorf("natsq: %w: snapshot holds an inconsistent wait of job %s", core.ErrInvalidState, id)
		}
		w := &waitRec{wait: sw.Wait, open: make(map[string]struct{}, len(sw.Open))}
		for _, child := range sw.Open {
			ch := s.jobs[child]
			if _, dup := w.open[child]; dup || ch == nil || ch.job.State.Terminal() {
				return fmt.Errorf("natsq: %w: snapshot holds an inconsistent wait of job %s on job %s", core.ErrInvalidState, id, child)
			}
			w.open[child] = struct{}{}
			ch.waiters = append(ch.waiters, id)
		}
		s.waits[id] = w
	}
	return nil
}
