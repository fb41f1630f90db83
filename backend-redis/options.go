package redisq

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/boson-go/boson/core"
)

// DefaultPrefix is the key prefix of a backend whose Options name none.
const DefaultPrefix = "boson"

// DefaultPollInterval is how often a subscription signals on its own when
// Options.PollInterval is zero.
const DefaultPollInterval = time.Second

// Options configure a Backend. The zero value is useful: prefix "boson",
// the Redis server's clock, the default limits, slog's default logger and
// Redis Functions where the server has them.
type Options struct {
	// Prefix starts every key, so that several applications can share one
	// Redis. It follows the rules of core.ValidateName. Default "boson".
	Prefix string
	// Clock, when set, decides every lease, deadline and due time instead
	// of the server's TIME; the time is passed to each script. Tests set a
	// *core.ManualClock here.
	Clock core.Clock
	// Limits bound payloads, headers and batches.
	Limits core.Limits
	// Logger receives the backend's few log lines. Default slog.Default().
	Logger *slog.Logger
	// Scripts chooses how the backend runs its code on the server. The zero
	// value, ScriptsAuto, uses Redis Functions and falls back to EVALSHA
	// scripts on a server without them.
	Scripts ScriptMode
	// PollInterval is how often a subscription from Subscribe signals even
	// without a notification, which makes up for notifications lost while
	// the pub/sub connection was down. Zero means DefaultPollInterval; a
	// negative value turns the periodic signal off.
	PollInterval time.Duration
	// OneSlot keeps every key of the prefix in one Redis Cluster slot (the
	// hash tag {prefix}) instead of a slot per queue. The task limits of
	// flow control that span queues (TaskConfig.MaxRunning,
	// MaxRunningPerKey, MaxStartsPerSecond, MaxStartsPerSecondPerKey and
	// HoldSequenceOnFailure) are then exact in one script on a cluster; the
	// cost is that one node serves the whole prefix. Without it a cluster
	// refuses those task limits (queue limits, sequences and unique modes
	// work in either layout). It changes the key names: switch only with
	// the prefix empty. It makes no difference on a single node.
	OneSlot bool
}

// ScriptMode says how a Backend runs its Lua code on the Redis server.
type ScriptMode int

const (
	// ScriptsAuto loads the code once per server as a Functions library
	// (Redis 7.0 or later) and calls it with FCALL. On a server without
	// Functions, or one that refuses FUNCTION or FCALL (a renamed command,
	// an ACL), the backend turns to ScriptsEval by itself.
	ScriptsAuto ScriptMode = iota
	// ScriptsEval sends every call as a script with EVALSHA, and with EVAL
	// when the server does not have the script yet. Each script then runs
	// the helpers it uses on every call; a Functions library defines them
	// once, when it loads.
	ScriptsEval
)

func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := core.ValidateName("prefix", o.Prefix); err != nil {
		return o, err
	}
	if o.Scripts != ScriptsAuto && o.Scripts != ScriptsEval {
		return o, invalidf("redisq: unknown script mode %d", o.Scripts)
	}
	if err := o.Limits.Validate(); err != nil {
		return o, err
	}
	o.Limits = o.Limits.WithDefaults()
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	return o, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{core.ErrInvalidArgument}, args...)...)
}
