package redisq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

var _ core.Awaiter = (*Backend)(nil)

// AwaitJobs parks the job of req.Lease on the jobs req.JobIDs names, in
// one script call on the job's queue: the call ends the run, stores the
// wait, an edge on each awaited job not yet terminal, and parks the job as
// sleeping (due now when the wait is satisfied at once). Every script
// that ends or deletes an awaited job counts it in the same call and wakes
// the job whose wait it satisfies. On a single node and with
// Options.OneSlot the awaited jobs may be in any queue; on a cluster with
// a slot per queue they must be in the waiting job's queue, and a wait
// across queues gives an error wrapping core.ErrUnsupported. See
// core.Awaiter.
func (b *Backend) AwaitJobs(ctx context.Context, req core.AwaitRequest) (core.AwaitResult, error) {
	var out core.AwaitResult
	if err := b.check("await"); err != nil {
		return out, err
	}
	if err := core.ValidateAwait(req); err != nil {
		return out, err
	}
	q, err := b.fencedQueue(ctx, "await", req.Lease)
	if err != nil {
		return out, err
	}
	queues, err := b.queuesOf(ctx, req.JobIDs)
	if err != nil {
		return out, err
	}
	var blob []byte
	for _, id := range req.JobIDs {
		cq, ok := queues[id]
		if !ok {
			// the script reports it, after the lease: an unknown id is
			// looked for in the waiting job's queue, where it is not
			cq = q
		}
		if b.sharded && cq != q {
			return out, fmt.Errorf("redisq: await: job %s is in queue %s and job %s in queue %s: a wait across queues needs one slot for the prefix on a cluster (Options.OneSlot): %w",
				req.Lease.JobID, q, id, cq, core.ErrUnsupported)
		}
		blob = appendLenString(blob, cq)
		blob = appendLenString(blob, id)
	}
	until := "0"
	if !req.Until.IsZero() {
		until = micros(req.Until)
	}
	cancel := "0"
	if req.CancelChildren {
		cancel = "1"
	}
	res, err := b.run(ctx, scriptAwait, q, req.Lease.JobID, token(req.Lease), q, string(req.Mode), micros(req.WakeAt()), until, cancel, string(blob))
	if err != nil {
		return out, wrap("await", err)
	}
	status, rest, err := reply(res, map[string]int{"ok": 2, "notfound": 1})
	if err != nil {
		return out, err
	}
	switch status {
	case "ok":
		out.Pending = int(toInt(rest[0]))
		out.Woken = toInt(rest[1]) == 1
		return out, nil
	case "notfound":
		id, _ := str(rest[0])
		return out, notFound("await", id)
	}
	return out, lost("await", req.Lease.JobID)
}

// appendLenString appends s after its length as a big-endian uint16, as
// the scripts' struct format "Hc0" reads it.
func appendLenString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// JobWait returns the latest wait job jobID began. See core.Awaiter.
func (b *Backend) JobWait(ctx context.Context, jobID string) (core.Wait, error) {
	if err := b.check("job wait"); err != nil {
		return core.Wait{}, err
	}
	if err := core.ValidateJobID(jobID); err != nil {
		return core.Wait{}, err
	}
	q, ok, err := b.queueOf(ctx, jobID)
	if err != nil {
		return core.Wait{}, err
	}
	if !ok {
		return core.Wait{}, notFound("job wait", jobID)
	}
	keys := b.ks.queueKeys(q)
	pipe := b.rdb.Pipeline()
	h := pipe.HGet(ctx, keys[kWait], jobID)
	j := pipe.HGet(ctx, keys[kWaitj], jobID)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return core.Wait{}, wrap("job wait", err)
	}
	if errors.Is(h.Err(), redis.Nil) || errors.Is(j.Err(), redis.Nil) {
		return core.Wait{}, notFound("job wait", jobID)
	}
	w, err := parseWait(jobID, h.Val(), j.Val())
	if err != nil {
		return core.Wait{}, fmt.Errorf("redisq: job wait: job %s: %w", jobID, err)
	}
	return w, nil
}

// parseWait decodes a "wait" and a "waitj" value (see queueKeys).
func parseWait(id, head, jobs string) (core.Wait, error) {
	f := strings.Split(head, "|")
	if len(f) != 7 {
		return core.Wait{}, fmt.Errorf("malformed wait %q", head)
	}
	nums := make([]int64, 0, 5)
	for _, i := range []int{0, 2, 3, 4, 5} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return core.Wait{}, fmt.Errorf("malformed wait %q", head)
		}
		nums = append(nums, n)
	}
	w := core.Wait{JobID: id, Mode: core.AwaitMode(f[1]), Token: nums[0], CancelChildren: nums[2] == 1,
		Pending: int(nums[4]), Woken: f[6] == "1"}
	if nums[1] != 0 {
		w.Until = microTime(nums[1])
	}
	for s := jobs; len(s) > 0; {
		var cid string
		var ok bool
		if _, s, ok = cutLenString(s); !ok { // the awaited job's queue
			return core.Wait{}, errors.New("malformed awaited jobs")
		}
		if cid, s, ok = cutLenString(s); !ok {
			return core.Wait{}, errors.New("malformed awaited jobs")
		}
		w.JobIDs = append(w.JobIDs, cid)
	}
	return w, nil
}

// cutLenString reads a string after its 2-byte length (see
// appendLenString) from the start of s.
func cutLenString(s string) (string, string, bool) {
	if len(s) < 2 {
		return "", s, false
	}
	n := int(binary.BigEndian.Uint16([]byte(s[:2])))
	if len(s) < 2+n {
		return "", s, false
	}
	return s[2 : 2+n], s[2+n:], true
}
