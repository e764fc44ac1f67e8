package workspace

import (
	"context"
	"testing"
	"time"
)

// TestCoalescedUpdates: a burst of updates to an applied workspace (node
// churn) runs once after the burst goes quiet, or at the latest Max after
// its first update; the first apply of a new workspace does not wait.
func TestCoalescedUpdates(t *testing.T) {
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin, Coalesce: Coalesce{Quiet: 300 * time.Millisecond, Max: 2 * time.Second}})
	burst := func(n int) Spec {
		s := testSpec("burst", n, 0)
		s.Coalesce = true
		return s
	}
	first := burst(0)
	start := time.Now()
	if _, err := e.Apply(first); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, first)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the first apply took %v", d)
	}
	applies := func() int { return count(calls(), "apply") }
	base := applies()

	// Ten updates 100 ms apart: one quiet burst.
	var last Spec
	for i := 1; i <= 10; i++ {
		last = burst(i)
		if _, err := e.Apply(last); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitApplied(t, e, last)
	if n := applies() - base; n != 1 {
		t.Errorf("%d applies for one burst of 10 updates, want 1", n)
	}

	// Updates that never go quiet still run at Max.
	base = applies()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deadline := time.Now().Add(3 * time.Second)
	for i := 100; time.Now().Before(deadline); i++ {
		last = burst(i)
		if _, err := e.Apply(last); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
	}
	if n := applies() - base; n < 1 {
		t.Errorf("no apply during 3 s of continuous updates (Max is 2 s)")
	}
	if _, err := e.Wait(ctx, last.Name, last.ContentHash()); err != nil {
		t.Fatal(err)
	}
	if n := applies() - base; n > 3 {
		t.Errorf("%d applies for 3 s of continuous updates, want at most 3", n)
	}
}
