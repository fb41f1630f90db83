package boson

import (
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// SignatureHeader is the reserved job header in which a spawn records the
// signature of its task's input (see [Task.Signature]). Like every header
// it takes part in the idempotency fingerprint, so a retried spawn whose
// task changed signature conflicts instead of returning the old job.
const SignatureHeader = "boson-signature"

// ReservedHeaderPrefix starts every header key boson sets itself. A spawn
// whose headers use a key with this prefix (in any letter case) fails with
// an error wrapping [core.ErrInvalidArgument].
const ReservedHeaderPrefix = "boson-"

// MaxVersionLength bounds a task version given to [Version].
const MaxVersionLength = 64

// ErrSignatureMismatch: a worker refused a job whose recorded signature
// differs from every signature its handler accepts. It wraps
// [core.ErrInvalidArgument].
var ErrSignatureMismatch = fmt.Errorf("%w: task signature mismatch", core.ErrInvalidArgument)

// TaskOption adjusts a task made by [NewTask].
type TaskOption func(*taskSettings)

type taskSettings struct {
	version   string
	versioned bool
}

// Version pins the task's signature to v instead of the shape of its input
// type: the signature becomes "version:" + v, and changing the input type
// without changing v keeps old jobs runnable by new workers (and the other
// way round). Bump v when the input's meaning changes even though its JSON
// shape does not. v must be 1 to [MaxVersionLength] printable ASCII
// characters without spaces; an invalid version is reported by
// [Task.Validate], every spawn and registration, never by a panic.
func Version(v string) TaskOption {
	return func(s *taskSettings) { s.version, s.versioned = v, true }
}

// Signature returns the task's signature, recorded on every job it spawns
// in the [SignatureHeader] header and compared by workers before they
// decode a job's input. It is "version:" + the version given to [Version],
// or else "shape:" + 16 hexadecimal digits of a SHA-256 hash of the shape
// of In: for structs the Go name, the json tag and the shape of every field
// JSON sees (sorted by Go name, embedded structs included, unexported fields
// and fields tagged "-" left out); the kinds of basic types; array lengths;
// slice, map and pointer element shapes; for named types with their own JSON
// or text encoding (time.Time, json.RawMessage, your Marshalers) the type's
// package path and name. Recursive types are described with back
// references. Type names of other types do not count, so renaming or moving
// a type keeps its signature; any change of a field's name, tag, kind or
// element type changes it. The hash is the same on every platform, run and
// Go release.
func (t Task[In, Out]) Signature() string { return t.sig }

// validateVersion reports whether v is a valid task version.
func validateVersion(v string) error {
	if v == "" || len(v) > MaxVersionLength {
		return fmt.Errorf("%w: task version %q must be 1 to %d bytes long", core.ErrInvalidArgument, v, MaxVersionLength)
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return fmt.Errorf("%w: task version %q has %q at byte %d; only printable ASCII without spaces is allowed", core.ErrInvalidArgument, v, v[i], i)
		}
	}
	return nil
}

// versionPrefix starts the signature of a task with a version.
const versionPrefix = "version:"

// taskSignature returns the signature of a task with input type in and the
// given options.
func taskSignature(in reflect.Type, opts []TaskOption) string {
	var s taskSettings
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if s.versioned {
		return versionPrefix + s.version
	}
	return shapeSignature(in)
}

// validateSignature reports whether a task's signature is valid: a shape
// signature always is, a version signature when its version is.
func validateSignature(sig string) error {
	if v, ok := strings.CutPrefix(sig, versionPrefix); ok {
		return validateVersion(v)
	}
	return nil
}

// stampSignature refuses caller headers with reserved keys and records sig
// in the request's headers.
func stampSignature(cfg *spawnConfig, sig string) error {
	for k := range cfg.headers {
		if len(k) >= len(ReservedHeaderPrefix) && strings.EqualFold(k[:len(ReservedHeaderPrefix)], ReservedHeaderPrefix) {
			return fmt.Errorf("%w: header %q: keys starting with %q are reserved", core.ErrInvalidArgument, k, ReservedHeaderPrefix)
		}
	}
	if sig == "" {
		return nil // the zero Task, whose empty name the spawn refuses
	}
	if cfg.headers == nil {
		cfg.headers = make(map[string]string, 1)
	}
	cfg.headers[SignatureHeader] = sig
	return nil
}

var shapeCache sync.Map // reflect.Type -> string

// shapeSignature returns "shape:" and 16 hexadecimal digits of the hash of
// t's canonical description.
func shapeSignature(t reflect.Type) string {
	if s, ok := shapeCache.Load(t); ok {
		return s.(string)
	}
	sum := sha256.Sum256([]byte(describeShape(t)))
	s := "shape:" + hex.EncodeToString(sum[:8])
	shapeCache.Store(t, s)
	return s
}

// describeShape returns the canonical description of t that its shape
// signature hashes.
func describeShape(t reflect.Type) string {
	d := shapeWriter{seen: map[reflect.Type]int{}}
	d.describe(t)
	return d.b.String()
}

type shapeWriter struct {
	b    strings.Builder
	seen map[reflect.Type]int // struct types, numbered in order of first visit
}

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// customEncoding reports whether the named type t encodes itself.
func customEncoding(t reflect.Type) bool {
	if t.Name() == "" || t.Kind() == reflect.Interface {
		return false
	}
	p := reflect.PointerTo(t)
	for _, i := range []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler, textUnmarshaler} {
		if t.Implements(i) || p.Implements(i) {
			return true
		}
	}
	return false
}

// kindNames are the descriptions of the kinds without elements, spelled
// out here so that the hash never depends on reflect's own spelling.
var kindNames = map[reflect.Kind]string{
	reflect.Bool: "bool", reflect.String: "string",
	reflect.Int: "int", reflect.Int8: "int8", reflect.Int16: "int16", reflect.Int32: "int32", reflect.Int64: "int64",
	reflect.Uint: "uint", reflect.Uint8: "uint8", reflect.Uint16: "uint16", reflect.Uint32: "uint32", reflect.Uint64: "uint64",
	reflect.Uintptr: "uintptr", reflect.Float32: "float32", reflect.Float64: "float64",
	reflect.Complex64: "complex64", reflect.Complex128: "complex128",
	reflect.Interface: "interface", reflect.Chan: "chan", reflect.Func: "func", reflect.UnsafePointer: "unsafe.Pointer",
}

func (d *shapeWriter) describe(t reflect.Type) {
	if t == nil { // NewTask[any, ...]: reflect.TypeFor of an interface is never nil, but guard anyway
		d.b.WriteString("nil")
		return
	}
	if customEncoding(t) {
		d.b.WriteString("custom(")
		d.b.WriteString(t.PkgPath())
		d.b.WriteByte('.')
		d.b.WriteString(t.Name())
		d.b.WriteByte(')')
		return
	}
	switch t.Kind() {
	case reflect.Array:
		d.b.WriteString("[" + strconv.Itoa(t.Len()) + "]")
		d.describe(t.Elem())
	case reflect.Slice:
		d.b.WriteString("[]")
		d.describe(t.Elem())
	case reflect.Pointer:
		d.b.WriteString("*")
		d.describe(t.Elem())
	case reflect.Map:
		d.b.WriteString("map[")
		d.describe(t.Key())
		d.b.WriteString("]")
		d.describe(t.Elem())
	case reflect.Struct:
		d.describeStruct(t)
	default:
		if n, ok := kindNames[t.Kind()]; ok {
			d.b.WriteString(n)
		} else {
			d.b.WriteString("kind" + strconv.Itoa(int(t.Kind())))
		}
	}
}

func (d *shapeWriter) describeStruct(t reflect.Type) {
	if n, ok := d.seen[t]; ok {
		d.b.WriteString("@" + strconv.Itoa(n))
		return
	}
	d.seen[t] = len(d.seen)
	fields := make([]reflect.StructField, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue // encoding/json never sees it
		}
		if !f.IsExported() {
			// encoding/json sees an unexported field only when it embeds
			// a struct, whose exported fields it promotes.
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if !f.Anonymous || ft.Kind() != reflect.Struct {
				continue
			}
		}
		fields = append(fields, f)
	}
	slices.SortFunc(fields, func(a, b reflect.StructField) int { return strings.Compare(a.Name, b.Name) })
	d.b.WriteString("struct{")
	for _, f := range fields {
		d.b.WriteString(strconv.Quote(f.Name))
		if f.Anonymous {
			d.b.WriteString(" embedded")
		}
		if tag, ok := f.Tag.Lookup("json"); ok {
			d.b.WriteString(" json=" + strconv.Quote(tag))
		}
		d.b.WriteByte(' ')
		d.describe(f.Type)
		d.b.WriteByte(';')
	}
	d.b.WriteByte('}')
}

// SignaturePolicy is what a worker does with a job whose recorded
// signature its handler does not accept. Jobs without a signature (spawned
// before signatures existed, or by a producer that sets none) always run.
type SignaturePolicy int

const (
	// SignatureWait, the default, leaves the job for a worker that
	// accepts its signature: the worker releases it with a durable sleep
	// (no attempt is consumed and no lease lingers) of a backoff that
	// starts at one second and doubles on each refusal of the same job by
	// the same worker, up to one minute. The job waits until a matching
	// worker takes it, for as long as that takes; the refusing worker logs
	// a warning naming both signatures, at most once per ten seconds per
	// task. It suits rolling deploys, where old and new workers overlap.
	// A job that was never started starts its MaxDuration clock at the
	// first refusal, since the store sees a claim.
	SignatureWait SignaturePolicy = iota + 1
	// SignatureFail fails the job permanently with an error wrapping
	// [ErrSignatureMismatch] that names the task and both signatures. It
	// suits fleets where every worker runs one build.
	SignatureFail
)

// String returns "wait", "fail", or "default" for the zero value.
func (p SignaturePolicy) String() string {
	switch p {
	case 0:
		return "default"
	case SignatureWait:
		return "wait"
	case SignatureFail:
		return "fail"
	}
	return "SignaturePolicy(" + strconv.Itoa(int(p)) + ")"
}

func validateSignaturePolicy(p SignaturePolicy) error {
	if p != 0 && p != SignatureWait && p != SignatureFail {
		return fmt.Errorf("%w: unknown signature policy %d", core.ErrInvalidArgument, int(p))
	}
	return nil
}

// AcceptSignatures makes the handler accept jobs recorded with any of sigs,
// besides those [Register] accepts on its own (the task's
// [Task.Signature]). A handler whose decoding copes with an older input
// can list the older signature so that jobs spawned by old producers run.
// A handler registered with [Worker.RegisterExecutor] checks signatures
// only when given this option: without it, it runs every job.
func AcceptSignatures(sigs ...string) HandlerOption {
	return func(r *registration) { r.signatures = append(r.signatures, sigs...) }
}

// OnSignatureMismatch sets the handler's [SignaturePolicy], overriding
// [WorkerOptions.SignatureMismatch].
func OnSignatureMismatch(p SignaturePolicy) HandlerOption {
	return func(r *registration) { r.sigPolicy = p }
}

// signatureGuard is the signature check of one registration.
type signatureGuard struct {
	task     string
	accepted []string
	policy   SignaturePolicy

	mu         sync.Mutex
	refusals   map[string]int // job id -> refusals by this worker, for the backoff
	lastWarn   time.Time      // process clock
	suppressed int
}

// maxTrackedRefusals bounds a guard's refusal counts; past it they restart.
const maxTrackedRefusals = 10_000

// signatureWaitBackoff is the release backoff of SignatureWait.
var signatureWaitBackoff = core.RetryPolicy{Initial: time.Second, Factor: 2, Max: time.Minute, Jitter: core.NoJitter}

// signatureWarnEvery bounds how often a guard logs a SignatureWait refusal.
const signatureWarnEvery = 10 * time.Second

// newSignatureGuard returns the check of r, or nil when r accepts every job.
func (w *Worker) newSignatureGuard(r *registration) (*signatureGuard, error) {
	if err := validateSignaturePolicy(r.sigPolicy); err != nil {
		return nil, err
	}
	if len(r.signatures) == 0 {
		return nil, nil
	}
	for _, s := range r.signatures {
		if s == "" {
			return nil, fmt.Errorf("%w: accepted signature of %s is empty", core.ErrInvalidArgument, r.task)
		}
	}
	p := r.sigPolicy
	if p == 0 {
		p = w.opts.SignatureMismatch
	}
	if p == 0 {
		p = SignatureWait
	}
	return &signatureGuard{task: r.task, accepted: slices.Compact(r.signatures), policy: p, refusals: map[string]int{}}, nil
}

// refuseSignature applies the registration's signature check to a claimed
// job: when the job's recorded signature is not accepted it settles the
// attempt by the policy, without decoding anything, and returns true.
func (w *Worker) refuseSignature(a *attempt, c *counterSet, g *signatureGuard) bool {
	sig, ok := a.job.Headers[SignatureHeader]
	if !ok || slices.Contains(g.accepted, sig) {
		return false
	}
	err := fmt.Errorf("%w: task %s: job %s has signature %s, this worker's handler accepts %s",
		ErrSignatureMismatch, g.task, a.job.ID, sig, strings.Join(g.accepted, ", "))
	if g.policy == SignatureFail {
		w.fail(a, c, err, true, false)
		return true
	}
	g.mu.Lock()
	if len(g.refusals) >= maxTrackedRefusals {
		clear(g.refusals)
	}
	g.refusals[a.job.ID]++
	delay := Backoff(signatureWaitBackoff, g.refusals[a.job.ID])
	warn := time.Since(g.lastWarn) >= signatureWarnEvery
	suppressed := g.suppressed
	if warn {
		g.lastWarn, g.suppressed = time.Now(), 0
	} else {
		g.suppressed++
	}
	g.mu.Unlock()
	until := w.clock.Now().Add(delay)
	log := w.attemptLog(&a.job)
	if warn {
		log.Warn("boson: job left for a worker that accepts its signature", "error", err, "until", until, "suppressed", suppressed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if serr := a.b.Sleep(ctx, a.currentLease(), until); serr != nil {
		if errors.Is(serr, core.ErrLeaseLost) {
			w.noteLost(a, c, log)
		} else {
			log.Error("boson: releasing a job of another signature failed; the lease will expire", "error", serr)
		}
	}
	return true
}
