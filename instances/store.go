package instances

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/instances/mapping"
)

// ErrNotFound means every source was read successfully within the TTL and
// none holds the instance. Only this error means "the instance is gone".
var ErrNotFound = errors.New("instance not found in state")

// ErrEmptied means a source that held instances read none (see
// emptiedError): an error, never "every instance gone".
var ErrEmptied = errors.New("state emptied")

// errRateLimited means a miss-triggered refresh found no token.
var errRateLimited = errors.New("refresh rate limited")

// Options tune a Store. Zero values take the config package defaults.
type Options struct {
	// TTL is how long a read is fresh.
	TTL time.Duration
	// MaxStaleness is how long a read may be served after its TTL when
	// refreshes fail; beyond it lookups are errors.
	MaxStaleness time.Duration
	// RefreshRate and RefreshBurst configure each source's token bucket.
	RefreshRate  float64
	RefreshBurst int
	// BackoffInitial and BackoffMax bound the retry delay after a failed
	// read (exponential, with jitter). Defaults 1s and 2m.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.TTL <= 0 {
		o.TTL = config.DefaultStateTTL
	}
	if o.MaxStaleness < o.TTL {
		o.MaxStaleness = max(config.DefaultStateMaxStaleness, o.TTL)
	}
	if o.RefreshRate <= 0 {
		o.RefreshRate = config.DefaultStateRefreshRate
	}
	if o.RefreshBurst <= 0 {
		o.RefreshBurst = config.DefaultStateRefreshBurst
	}
	if o.BackoffInitial <= 0 {
		o.BackoffInitial = time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// OptionsFromConfig takes the Store options from the cloud config.
func OptionsFromConfig(in *config.Instances) Options {
	return Options{TTL: in.TTL, MaxStaleness: in.MaxStaleness, RefreshRate: in.RefreshRate, RefreshBurst: in.RefreshBurst}
}

// Store serves instance lookups from the state of its sources.
type Store struct {
	opts    Options
	sources []*sourceState

	ctx    context.Context // async refreshes; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// snapshot is one successful read of a source.
type snapshot struct {
	index  *Index
	readAt time.Time // when the read started
	gen    uint64
}

type sourceState struct {
	src     Source
	mapping atomic.Pointer[mapping.Mapping]
	opts    *Options
	limiter *rate.Limiter
	flight  singleflight.Group
	snap    atomic.Pointer[snapshot]
	reads   atomic.Int64
	async   atomic.Bool // an async refresh is running
	// base bounds every read: reads are shared by all waiting callers, so
	// they are detached from each caller's ctx but end with the Store.
	base     context.Context
	inflight sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	gen     uint64
	bo      *backoff.ExponentialBackOff
	lastErr error
	retryAt time.Time
	closed  bool
	// missed remembers keys a miss-triggered refresh already confirmed
	// absent, by snapshot generation: a lookup that misses again on the
	// same snapshot reads nothing (the lifecycle controller asks about a
	// node every 5 s; without this each ask would read the state).
	missed map[string]uint64
}

// maxMissed bounds the negative cache of one source.
const maxMissed = 4096

func (ss *sourceState) missedOn(key string, gen uint64) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	g, ok := ss.missed[key]
	return ok && g == gen
}

func (ss *sourceState) rememberMiss(key string, gen uint64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.missed == nil || len(ss.missed) >= maxMissed {
		ss.missed = map[string]uint64{}
	}
	ss.missed[key] = gen
}

// NewStore builds a Store over sources with mapping m. Nothing is read
// until the first lookup or Start.
func NewStore(opts Options, m *mapping.Mapping, sources ...Source) (*Store, error) {
	if m == nil {
		return nil, errors.New("state store: no instances mapping")
	}
	if len(sources) == 0 {
		return nil, errors.New("state store: no state sources")
	}
	opts.defaults()
	s := &Store{opts: opts}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	seen := map[string]bool{}
	for _, src := range sources {
		if seen[src.Name()] {
			return nil, fmt.Errorf("state store: duplicate source %q", src.Name())
		}
		seen[src.Name()] = true
		bo := backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(opts.BackoffInitial),
			backoff.WithMaxInterval(opts.BackoffMax),
			backoff.WithMaxElapsedTime(0),
			backoff.WithRandomizationFactor(0.5),
		)
		ss := &sourceState{
			src: src, opts: &s.opts, bo: bo, base: s.ctx,
			limiter: rate.NewLimiter(rate.Limit(opts.RefreshRate), opts.RefreshBurst),
		}
		ss.mapping.Store(m)
		s.sources = append(s.sources, ss)
	}
	return s, nil
}

// Start refreshes every source in the background, keeping it within its
// TTL, until ctx is done or Close is called.
func (s *Store) Start(ctx context.Context) {
	collector.set(s)
	for _, src := range s.sources {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			src.loop(ctx, s.ctx)
		}()
	}
}

// Close stops background refreshes and waits for them to end.
func (s *Store) Close() {
	s.cancel()
	s.wg.Wait()
	for _, src := range s.sources {
		src.mu.Lock()
		src.closed = true
		src.mu.Unlock()
		src.inflight.Wait()
		if c, ok := src.src.(interface{ Close() error }); ok {
			_ = c.Close()
		}
	}
}

// readCount is the number of backend reads performed so far.
func (s *Store) readCount() int64 {
	var n int64
	for _, src := range s.sources {
		n += src.reads.Load()
	}
	return n
}

// Refresh reads every source now (subject to rate limits and backoff).
func (s *Store) Refresh(ctx context.Context) error {
	var errs []error
	for _, src := range s.sources {
		var gen uint64
		if cur := src.snap.Load(); cur != nil {
			gen = cur.gen
		}
		if _, err := src.refresh(ctx, gen); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SetMapping replaces the instances mapping (an override's instances.hcl
// changed) and re-reads every source, rate limits permitting, so lookups
// use it within one refresh; until then the previous index answers.
func (s *Store) SetMapping(m *mapping.Mapping) {
	if m == nil {
		return
	}
	for _, src := range s.sources {
		src.mapping.Store(m)
	}
	go func() {
		if err := s.Refresh(s.ctx); err != nil && s.ctx.Err() == nil {
			klog.Warningf("tfccm state: refresh after a mapping change: %v", err)
		}
	}()
}

// Mapping is the instances mapping the store serves (nil without sources).
func (s *Store) Mapping() *mapping.Mapping {
	for _, src := range s.sources {
		return src.mapping.Load()
	}
	return nil
}

// Lookup finds an instance by providerID first, then by node name (either
// may be empty). It returns an error wrapping ErrNotFound only when every
// source's state is fresh, complete and lacks the instance; a read
// failure, too-stale state, a mapping error or an ambiguous key is a
// different error. A miss forces at most one rate-limited refresh per
// source.
func (s *Store) Lookup(ctx context.Context, providerID, name string) (*Instance, error) {
	if providerID == "" && name == "" {
		return nil, errors.New("instance lookup: no providerID and no node name")
	}
	// The hit path allocates nothing.
	var unsure []error
	type probe struct {
		src  *sourceState
		snap *snapshot
	}
	var probesBuf [4]probe
	probes := probesBuf[:0]
	for _, src := range s.sources {
		snap, err := src.current(ctx, s)
		if err != nil {
			unsure = append(unsure, err)
			continue
		}
		in, err := snap.index.Find(providerID, name)
		if err != nil {
			return nil, fmt.Errorf("instance %s in source %q: %w", describe(providerID, name), src.src.Name(), err)
		}
		if in != nil {
			return in, nil
		}
		probes = append(probes, probe{src, snap})
	}
	key := describe(providerID, name)
	// A miss: the instance may be newer than our read. Refresh once.
	for i, p := range probes {
		if p.src.missedOn(key, p.snap.gen) {
			continue // this snapshot was read for this very miss already
		}
		snap, err := p.src.refresh(ctx, p.snap.gen)
		reread := err == nil
		switch {
		case err == nil:
			probes[i].snap = snap
		case errors.Is(err, errRateLimited):
		default:
			unsure = append(unsure, err)
			probes[i].snap = nil
			continue
		}
		in, err := probes[i].snap.index.Find(providerID, name)
		if err != nil {
			return nil, fmt.Errorf("instance %s in source %q: %w", key, p.src.src.Name(), err)
		}
		if in != nil {
			return in, nil
		}
		if reread {
			p.src.rememberMiss(key, probes[i].snap.gen)
		}
	}
	now := s.opts.Now()
	for _, p := range probes {
		if p.snap == nil {
			continue
		}
		if age := now.Sub(p.snap.readAt); age > s.opts.TTL {
			unsure = append(unsure, fmt.Errorf("state source %q: last successful read is %s old (ttl %s)", p.src.src.Name(), age.Round(time.Millisecond), s.opts.TTL))
		} else if err := p.snap.index.incomplete(); err != nil {
			unsure = append(unsure, fmt.Errorf("state source %q: %w", p.src.src.Name(), err))
		}
	}
	if len(unsure) > 0 {
		return nil, fmt.Errorf("instance %s not found, and its absence cannot be confirmed: %w", key, errors.Join(unsure...))
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
}

// Instances lists the instances of every source's current state (reading
// it if needed), sorted by name within each source.
func (s *Store) Instances(ctx context.Context) ([]*Instance, error) {
	var out []*Instance
	for _, src := range s.sources {
		snap, err := src.current(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, snap.index.Instances()...)
	}
	return out, nil
}

func describe(providerID, name string) string {
	switch {
	case providerID == "":
		return fmt.Sprintf("%q", name)
	case name == "":
		return fmt.Sprintf("%q", providerID)
	default:
		return fmt.Sprintf("%q (node %q)", providerID, name)
	}
}

// current returns a snapshot no older than MaxStaleness, reading the
// source if there is none; a snapshot past its TTL triggers an async
// refresh and is served meanwhile.
func (ss *sourceState) current(ctx context.Context, s *Store) (*snapshot, error) {
	cur := ss.snap.Load()
	now := ss.opts.Now()
	if cur != nil {
		age := now.Sub(cur.readAt)
		if age <= ss.opts.TTL {
			return cur, nil
		}
		if age <= ss.opts.MaxStaleness {
			ss.refreshAsync(s, cur.gen)
			return cur, nil
		}
	}
	var gen uint64
	if cur != nil {
		gen = cur.gen
	}
	snap, err := ss.refresh(ctx, gen)
	if err != nil {
		if cur == nil {
			return nil, fmt.Errorf("state source %q: no state read yet: %w", ss.src.Name(), err)
		}
		return nil, fmt.Errorf("state source %q: state is %s old, beyond max_staleness %s: %w",
			ss.src.Name(), now.Sub(cur.readAt).Round(time.Millisecond), ss.opts.MaxStaleness, err)
	}
	return snap, nil
}

func (ss *sourceState) refreshAsync(s *Store, gen uint64) {
	if !ss.async.CompareAndSwap(false, true) {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer ss.async.Store(false)
		_, _ = ss.refresh(s.ctx, gen)
	}()
}

// refresh reads the source unless a read newer than seenGen exists. Calls
// are coalesced; the read itself is detached from any one caller's ctx.
// A refresh that must succeed (no usable snapshot) waits for a token; an
// optional one (the snapshot is still servable) takes one only if free.
func (ss *sourceState) refresh(ctx context.Context, seenGen uint64) (*snapshot, error) {
	ch := ss.flight.DoChan("refresh", func() (any, error) {
		ss.mu.Lock()
		if ss.closed {
			ss.mu.Unlock()
			return nil, fmt.Errorf("state source %q: store closed", ss.src.Name())
		}
		ss.inflight.Add(1)
		ss.mu.Unlock()
		defer ss.inflight.Done()
		if cur := ss.snap.Load(); cur != nil && cur.gen > seenGen {
			return cur, nil
		}
		ss.mu.Lock()
		retryAt, lastErr := ss.retryAt, ss.lastErr
		ss.mu.Unlock()
		now := ss.opts.Now()
		if lastErr != nil && now.Before(retryAt) {
			return nil, fmt.Errorf("%w (retrying in %s)", lastErr, retryAt.Sub(now).Round(time.Millisecond))
		}
		cur := ss.snap.Load()
		mustRead := cur == nil || now.Sub(cur.readAt) > ss.opts.MaxStaleness
		if mustRead {
			wctx, cancel := context.WithTimeout(ss.base, time.Minute)
			err := ss.limiter.Wait(wctx)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("state source %q: %w", ss.src.Name(), err)
			}
		} else if !ss.limiter.Allow() {
			return cur, errRateLimited
		}
		return ss.read(ss.base)
	})
	select {
	case r := <-ch:
		snap, _ := r.Val.(*snapshot)
		return snap, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read performs one backend read and installs the new snapshot.
func (ss *sourceState) read(ctx context.Context) (*snapshot, error) {
	start := ss.opts.Now()
	ss.reads.Add(1)
	st, err := ss.src.Read(ctx)
	if err != nil {
		return nil, ss.failed(err)
	}
	m := ss.mapping.Load()
	ix := BuildIndex(m, st)
	if errs, n := ix.Errors(); n > 0 {
		klog.Warningf("tfccm state: source %q: %d resource(s) failed to map with %s; first: %v", ss.src.Name(), n, m.Filename(), errs[0])
	}
	if err := emptiedError(ss.src, ss.snap.Load(), ix); err != nil {
		return nil, ss.failed(err)
	}
	ss.mu.Lock()
	ss.gen++
	snap := &snapshot{index: ix, readAt: start, gen: ss.gen}
	ss.snap.Store(snap)
	ss.bo.Reset()
	ss.lastErr, ss.retryAt = nil, time.Time{}
	ss.mu.Unlock()
	klog.V(4).Infof("tfccm state: source %q read: %d resources, %d instances", ss.src.Name(), ix.Resources(), ix.Len())
	return snap, nil
}

// failed records a failed read: the current snapshot keeps serving (up
// to MaxStaleness) and the next read waits for the backoff. It returns err.
func (ss *sourceState) failed(err error) error {
	ss.mu.Lock()
	delay := ss.bo.NextBackOff()
	ss.lastErr, ss.retryAt = err, ss.opts.Now().Add(delay)
	ss.mu.Unlock()
	klog.Warningf("tfccm state: reading source %q failed, retrying in %s: %v", ss.src.Name(), delay.Round(time.Millisecond), err)
	return err
}

// emptyAllower is a Source that may be configured to accept an empty read
// after one with instances (config.StateSource.AllowEmpty).
type emptyAllower interface {
	AllowEmpty() bool
}

// emptiedError refuses a read of src that maps no instance when its
// current snapshot prev has some: a backend that suddenly answers with an
// empty or missing state (`tofu state pull` prints nothing) would
// otherwise make every node look gone. It is an error like a failed read
// (prev keeps serving, staleness grows), unless src allows empty reads.
// A first read may be empty (a cluster whose infrastructure is not
// applied yet).
func emptiedError(src Source, prev *snapshot, ix *Index) error {
	if prev == nil || prev.index.Len() == 0 || ix.Len() > 0 {
		return nil
	}
	if a, ok := src.(emptyAllower); ok && a.AllowEmpty() {
		return nil
	}
	return fmt.Errorf("state source %q: %w: the last good read had %d instance(s), this one %d resource(s) and no instance (an emptied or missing remote state?); the last good state keeps serving (allow_empty = true accepts it)",
		src.Name(), ErrEmptied, prev.index.Len(), ix.Resources())
}

// refreshAtPercent is the share of the TTL after which the background loop
// reads again: about one read per TTL, early enough that a lookup rarely
// finds the snapshot older than the TTL.
const refreshAtPercent = 90

// loop keeps the source fresh until ctx ends or the store is closed: it
// reads when the snapshot reaches 90% of its TTL, and after a failure when
// the backoff allows. It is wait.BackoffUntil driven by refreshSchedule,
// whose delay is computed after each tick from the snapshot's age and the
// source's backoff.
func (ss *sourceState) loop(ctx, storeCtx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(storeCtx, cancel)
	defer stop()
	r := &refreshSchedule{ss: ss}
	wait.BackoffUntilWithContext(ctx, r.tick, r, true)
}

// refreshSchedule is one source's background refresh: tick reads the
// source if a read is due, Backoff (wait.BackoffManager) times the next
// tick. Both run on the loop's goroutine only.
type refreshSchedule struct {
	ss     *sourceState
	failed bool // the last tick's refresh failed or was rate limited
	timer  clock.Timer
}

// tick refreshes the source if it is due (it may have been refreshed by a
// lookup meanwhile).
func (r *refreshSchedule) tick(ctx context.Context) {
	r.failed = false
	if r.ss.untilDue() > 0 {
		return
	}
	var gen uint64
	if cur := r.ss.snap.Load(); cur != nil {
		gen = cur.gen
	}
	if _, err := r.ss.refresh(ctx, gen); err != nil {
		r.failed = true
	}
}

// Backoff returns the timer for the next tick: when the snapshot reaches
// 90% of its TTL, not before a failed read's retry time, and after a
// failed tick not before the next token (failures set retryAt; rate
// limiting and anything else wait for a token rather than spin).
func (r *refreshSchedule) Backoff() clock.Timer {
	d := r.delay()
	if r.timer == nil {
		r.timer = clock.RealClock{}.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	return r.timer
}

// delay is how long the loop waits before its next tick.
func (r *refreshSchedule) delay() time.Duration {
	d := r.ss.untilDue()
	if r.failed {
		d = max(d, 10*time.Millisecond, time.Duration(float64(time.Second)/r.ss.opts.RefreshRate))
	}
	return max(d, 0)
}

// untilDue is how long until the source needs a background read: when its
// snapshot reaches 90% of the TTL (now, if there is none), or, after a
// failed read, when its backoff allows, whichever is later.
func (ss *sourceState) untilDue() time.Duration {
	var d time.Duration
	now := ss.opts.Now()
	if cur := ss.snap.Load(); cur != nil {
		d = cur.readAt.Add(ss.opts.TTL * refreshAtPercent / 100).Sub(now)
	}
	ss.mu.Lock()
	if ss.lastErr != nil {
		d = max(d, ss.retryAt.Sub(now))
	}
	ss.mu.Unlock()
	return d
}
