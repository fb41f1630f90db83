package admin

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/boson-go/boson/core"
)

// declareQueueBody is the optional JSON body of PUT /queues/{queue}: the
// settings to declare the queue with (absent fields are zero, which means
// the runtime's defaults).
type declareQueueBody struct {
	Queue        string   `json:"queue"`
	Paused       bool     `json:"paused"`
	RetentionTTL duration `json:"retention_ttl"`
	CleanupLimit int      `json:"cleanup_limit"`
	MaxRunning   int      `json:"max_running"`
}

// parseDeclareQueue turns a declaration body into a validated config for
// queue; a queue named in the body must match the path.
func parseDeclareQueue(data []byte, queue string) (core.QueueConfig, error) {
	var b declareQueueBody
	if len(bytes.TrimSpace(data)) > 0 {
		if err := decodeStrict(data, &b); err != nil {
			return core.QueueConfig{}, err
		}
	}
	if b.Queue != "" && b.Queue != queue {
		return core.QueueConfig{}, invalidf("queue", "%q differs from the queue %q in the path", b.Queue, queue)
	}
	c := core.QueueConfig{Queue: queue, Paused: b.Paused, RetentionTTL: time.Duration(b.RetentionTTL), CleanupLimit: b.CleanupLimit, MaxRunning: b.MaxRunning}
	if err := core.ValidateQueueConfig(c); err != nil {
		return core.QueueConfig{}, err
	}
	return c, nil
}

// queueCreatedView answers PUT /queues/{queue}.
type queueCreatedView struct {
	// Created: this request declared the queue; false when it was declared
	// before with the same config.
	Created bool      `json:"created"`
	Queue   queueView `json:"queue"`
}

// apiCreateQueue declares a queue (core.QueueDeclarer.CreateQueue): 201
// when it declared it, 200 when the queue was declared with the same
// config, 409 queue_conflict when with another (nothing changes), 501 when
// the backend cannot declare queues.
func (h *Handler) apiCreateQueue(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	if err == nil {
		err = requireJSON(r, body)
	}
	var cfg core.QueueConfig
	if err == nil {
		cfg, err = parseDeclareQueue(body, q)
	}
	var created bool
	if err == nil {
		var b core.QueueBackend
		if b, err = h.st.forQueue(q); err == nil {
			if cfg.UsesFlowControl() {
				if _, ok := b.(core.FlowController); !ok {
					err = fmt.Errorf("%w: the store does not offer flow control (max_running)", core.ErrUnsupported)
				}
			}
			if err == nil {
				_, created, err = core.CreateQueue(r.Context(), b, cfg)
			}
		}
	}
	var v queueView
	if err == nil {
		v, err = h.queueInfo(r, q)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		h.log.InfoContext(r.Context(), "admin: queue declared", "queue", q)
	}
	writeJSON(w, status, queueCreatedView{Created: created, Queue: v})
}

// queueDeclared reports whether b holds queue declared; a backend without
// declarations has none.
func queueDeclared(r *http.Request, b core.QueueBackend, queue string) (bool, error) {
	ok, err := core.QueueDeclared(r.Context(), b, queue)
	if errors.Is(err, core.ErrUnsupported) {
		return false, nil
	}
	return ok, err
}
