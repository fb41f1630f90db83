package natsq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MinServerVersion is the oldest NATS server the backend runs on.
const MinServerVersion = "2.9.0"

// duplicateWindow is how long the server remembers command ids, so that a
// command published again after a lost acknowledgement is stored once.
const duplicateWindow = 2 * time.Minute

func checkServerVersion(nc *nats.Conn) error {
	v := nc.ConnectedServerVersion()
	if v == "" {
		return fmt.Errorf("natsq: %w: not connected to a server", core.ErrUnsupported)
	}
	if !versionAtLeast(v, 2, 9) {
		return fmt.Errorf("natsq: %w: server %s is older than %s", core.ErrUnsupported, v, MinServerVersion)
	}
	return nil
}

// versionAtLeast reports whether the semantic version v is major.minor or later.
func versionAtLeast(v string, major, minor int) bool {
	v = strings.TrimPrefix(v, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(digits(parts[1]))
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

func digits(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return s[:i]
		}
	}
	return s
}

// streamConfig is the configuration of a namespace's command stream. It
// uses only options a 2.9 server knows.
func streamConfig(o Options) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName(o.Namespace),
		Description: "boson job queue command log, namespace " + o.Namespace,
		Subjects:    []string{logSubject(o.Namespace), partSubject(o.Namespace)},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		Discard:     jetstream.DiscardOld,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		MaxAge:      0,
		MaxMsgSize:  -1,
		Duplicates:  duplicateWindow,
		DenyDelete:  true,
	}
}

// ensureStream creates the command stream or opens the existing one, and
// reads its configuration back: a server that silently dropped an option
// would break the backend's guarantees, so New refuses to run on it.
func ensureStream(ctx context.Context, js jetstream.JetStream, o Options) (jetstream.Stream, error) {
	want := streamConfig(o)
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = js.Stream(ctx, want.Name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("natsq: stream %s: %w", want.Name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("natsq: stream %s info: %w", want.Name, err)
	}
	if err := checkStreamConfig(want, info.Config); err != nil {
		return nil, err
	}
	return s, nil
}

func checkStreamConfig(want, got jetstream.StreamConfig) error {
	var bad []string
	for _, subj := range want.Subjects {
		if !slices.Contains(got.Subjects, subj) {
			bad = append(bad, "subjects "+strings.Join(got.Subjects, ","))
			break
		}
	}
	if got.Retention != want.Retention {
		bad = append(bad, "retention "+got.Retention.String())
	}
	if got.Storage != want.Storage {
		bad = append(bad, "storage "+got.Storage.String())
	}
	if got.Replicas != want.Replicas {
		bad = append(bad, fmt.Sprintf("replicas %d (want %d)", got.Replicas, want.Replicas))
	}
	if got.MaxMsgs > 0 || got.MaxBytes > 0 || got.MaxAge > 0 {
		bad = append(bad, "limits that would drop commands")
	}
	if got.Duplicates <= 0 {
		bad = append(bad, "no duplicate window")
	}
	if !got.DenyDelete {
		bad = append(bad, "deny_delete off")
	}
	if len(bad) > 0 {
		return fmt.Errorf("natsq: %w: stream %s has %s", core.ErrUnsupported, want.Name, strings.Join(bad, "; "))
	}
	return nil
}

// DeleteNamespace deletes the command stream of namespace ns and with it
// every job, run, checkpoint and config of the namespace. Backends still
// open on it stop working. It is meant for tests and for decommissioning.
func DeleteNamespace(ctx context.Context, nc *nats.Conn, ns string) error {
	if err := core.ValidateName("namespace", ns); err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("natsq: jetstream: %w", err)
	}
	if err := js.DeleteStream(ctx, StreamName(ns)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("natsq: delete stream %s: %w", StreamName(ns), err)
	}
	if err := js.DeleteKeyValue(ctx, metaBucket(ns)); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("natsq: delete bucket %s: %w", metaBucket(ns), err)
	}
	if err := js.DeleteObjectStore(ctx, snapBucket(ns)); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("natsq: delete object store %s: %w", snapBucket(ns), err)
	}
	return nil
}
