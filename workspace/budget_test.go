package workspace

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestBudget: passes and probes share the slots; a probe gives way to
// queued and waiting passes, for at most its maximum wait.
func TestBudget(t *testing.T) {
	none := func() int { return 0 }
	tests := []struct {
		name    string
		size    int
		held    int               // slots taken before the probe asks
		queued  func() int        // the queue's length as the probe sees it
		maxWait time.Duration     // the probe's
		release time.Duration     // a held slot is given back after this (0: never)
		want    func(error) error // nil: as expected
	}{
		{name: "free slot, nothing queued", size: 2, queued: none, maxWait: time.Minute},
		{name: "every slot held", size: 1, held: 1, queued: none, maxWait: time.Minute, want: wantTimeout},
		{name: "slot released", size: 1, held: 1, queued: none, maxWait: time.Minute, release: 50 * time.Millisecond},
		{name: "a pass is queued", size: 2, queued: func() int { return 1 }, maxWait: time.Minute, want: wantTimeout},
		{name: "queued, but waited long enough", size: 2, queued: func() int { return 1 }, maxWait: 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBudget(tt.size)
			for range tt.held {
				if err := b.acquirePass(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			if tt.release > 0 {
				time.AfterFunc(tt.release, b.release)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			err := b.acquireProbe(ctx, tt.queued, tt.maxWait)
			check := tt.want
			if check == nil {
				check = wantNil
			}
			if e := check(err); e != nil {
				t.Error(e)
			}
		})
	}
}

func wantNil(err error) error {
	if err != nil {
		return errors.New("probe did not get a slot: " + err.Error())
	}
	return nil
}

func wantTimeout(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return errors.New("probe got a slot it must wait for")
	}
	return nil
}

// TestBudgetPassFirst: when a slot is released, a waiting pass gets it
// before a waiting probe, and the probe gets the next one.
func TestBudgetPassFirst(t *testing.T) {
	b := newBudget(1)
	if err := b.acquirePass(t.Context()); err != nil {
		t.Fatal(err)
	}
	var order []string
	var got atomic.Int32
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		if err := b.acquireProbe(t.Context(), func() int { return 0 }, time.Minute); err != nil {
			t.Error(err)
			return
		}
		got.Add(1)
		order = append(order, "probe")
		b.release()
	}()
	time.Sleep(50 * time.Millisecond) // the probe waits first
	passDone := make(chan struct{})
	go func() {
		defer close(passDone)
		if err := b.acquirePass(t.Context()); err != nil {
			t.Error(err)
			return
		}
		got.Add(1)
		order = append(order, "pass")
		b.release()
	}()
	for waiting := false; !waiting; {
		b.mu.Lock()
		waiting = b.passes == 1
		b.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	b.release()
	<-passDone
	<-probeDone
	if got.Load() != 2 || len(order) != 2 || order[0] != "pass" {
		t.Errorf("slots went to %v, want the pass first", order)
	}
}
