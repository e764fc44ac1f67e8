package workspace

import (
	"context"
	"sync"
	"time"
)

// The engine's budget of tofu processes: Options.Parallelism slots, shared
// by the passes (the workers) and the probes (Probe), so that a burst of
// applies and a round of health probes never run more tofu processes at
// once than the engine is configured for. Passes go first: a probe waits
// while any pass is waiting for a slot or queued, for at most
// probeMaxWait; after that it takes the next free slot, so health is
// still read, later, under work that never stops.

// probeMaxWait bounds how long a probe gives way to queued passes.
const probeMaxWait = 2 * time.Minute

// probePoll is how often a waiting probe looks at the queue again (the
// queue does not signal when it empties).
const probePoll = 500 * time.Millisecond

// budget counts the engine's tofu slots.
type budget struct {
	mu      sync.Mutex
	size    int
	used    int
	passes  int           // passes waiting for a slot
	changed chan struct{} // closed and replaced when a slot is released
}

func newBudget(size int) *budget {
	return &budget{size: max(size, 1), changed: make(chan struct{})}
}

// acquirePass takes a slot for a pass, waiting for one if probes hold
// them all. It fails only when ctx ends.
func (b *budget) acquirePass(ctx context.Context) error {
	b.mu.Lock()
	b.passes++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.passes--
		b.mu.Unlock()
	}()
	return b.take(ctx, 0, func() bool { return b.used < b.size })
}

// acquireProbe takes a slot for a probe: a free one that no pass is
// waiting for, while queued() reports no queued pass, or after maxWait
// any free one. It fails only when ctx ends.
func (b *budget) acquireProbe(ctx context.Context, queued func() int, maxWait time.Duration) error {
	deadline := time.Now().Add(maxWait)
	return b.take(ctx, probePoll, func() bool {
		if b.used >= b.size {
			return false
		}
		return time.Now().After(deadline) || (b.passes == 0 && queued() == 0)
	})
}

// take waits until may (called with b.mu held) allows a slot and takes
// it, looking again on every release and, with poll > 0, every poll.
func (b *budget) take(ctx context.Context, poll time.Duration, may func() bool) error {
	var tick <-chan time.Time
	if poll > 0 {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		b.mu.Lock()
		if may() {
			b.used++
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-tick:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives a slot back.
func (b *budget) release() {
	b.mu.Lock()
	b.used--
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}
