package engine

import (
	"context"

	"github.com/boson-go/boson/core"
)

// SaveCheckpoint implements core.QueueBackend.
func (e *Engine) SaveCheckpoint(ctx context.Context, lease core.Lease, step string, value []byte) ([]byte, error) {
	if err := e.check("save checkpoint"); err != nil {
		return nil, err
	}
	if err := core.ValidateLease(lease); err != nil {
		return nil, err
	}
	if err := core.ValidateName("step", step); err != nil {
		return nil, err
	}
	if err := e.limits.ValidatePayload("value", value); err != nil {
		return nil, err
	}
	var stored []byte
	err := e.st.WriteTx(ctx, func(q Querier) error {
		stored = nil
		j, now, err := e.lockFenced(ctx, q, lease)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, e.render("INSERT INTO {s}checkpoints (job_id, step, value, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (job_id, step) DO NOTHING"),
			j.ID, step, nullBytes(value), now); err != nil {
			return err
		}
		rows, err := q.Query(ctx, e.render("SELECT value FROM {s}checkpoints WHERE job_id = ? AND step = ?"), j.ID, step)
		if err != nil {
			return err
		}
		defer rows.Close()
		if rows.Next() {
			if err := rows.Scan(&stored); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, e.wrap("save checkpoint", err)
	}
	if len(stored) == 0 {
		if value != nil {
			return []byte{}, nil
		}
		return nil, nil
	}
	return append([]byte(nil), stored...), nil
}
