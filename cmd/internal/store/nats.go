package store

import (
	"context"
	"fmt"
	"net/url"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
)

// openNATS opens "nats://host:port?namespace=NAME".
func openNATS(ctx context.Context, raw string, opts Options) (*Store, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalidURL(raw, err.Error())
	}
	ns := takeParam(u, "namespace")
	if ns == "" {
		ns = "boson"
	}
	if err := core.ValidateName("namespace", ns); err != nil {
		return nil, invalidURL(raw, err.Error())
	}
	if len(u.Query()) > 0 {
		return nil, invalidURL(raw, "nats takes only the namespace option")
	}
	if opts.Isolate {
		ns = ns + "-" + uniqueSuffix()
	}
	nc, err := nats.Connect(u.String(), nats.Name("boson"))
	if err != nil {
		return nil, fmt.Errorf("connect nats %s: %w", u.Redacted(), err)
	}
	b, err := natsq.New(ctx, nc, natsq.Options{Namespace: ns})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats %s: %w", u.Redacted(), err)
	}
	s := &Store{Backend: b, Kind: "nats", Location: u.Redacted() + " namespace " + ns}
	// Messages published by this connection: commands, acks and requests.
	s.wireFn = func() int64 { return int64(nc.Stats().OutMsgs) }
	s.onClose(func() error { nc.Close(); return nil })
	if opts.drops() {
		s.isolated = true
		s.onClose(func() error { return natsq.DeleteNamespace(context.Background(), nc, ns) })
	}
	s.onClose(b.Close)
	return s, nil
}
