package workspace

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDestroyIsFinal: an Apply that arrives after a Destroy (an update
// racing a Service deletion) is refused and runs nothing, in this process
// and after a restart; the workspace stays destroyed.
func TestDestroyIsFinal(t *testing.T) {
	work := t.TempDir()
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{WorkDir: work, Binary: bin})
	spec := Spec{Name: "lb-x", Files: map[string][]byte{"main.tf": []byte(`resource "terraform_data" "a" { input = 1 }`)}}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	// The racing update, queued right behind the destroy.
	newer := Spec{Name: "lb-x", Files: map[string][]byte{"main.tf": []byte(`resource "terraform_data" "a" { input = 2 }`)}}
	if _, err := e.Apply(newer); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("Apply after Destroy = %v, want ErrDestroyed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := e.Wait(ctx, spec.Name, spec.ContentHash()); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %+v, %v", st, err)
	}
	before := len(calls())
	if _, err := e.Apply(newer); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("Apply after the destroy finished = %v, want ErrDestroyed", err)
	}
	// A new incarnation on the same work dir refuses it too.
	e2 := newTestEngine(t, Options{WorkDir: work, Binary: bin})
	if _, err := e2.Apply(newer); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("Apply after a restart = %v, want ErrDestroyed", err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(calls()) - before; n != 0 {
		t.Errorf("%d tofu runs after the workspace was destroyed", n)
	}
	if st := e2.Status("lb-x"); st.AppliedHash != "" {
		t.Errorf("destroyed workspace reports applied content: %+v", st)
	}
	// Other workspaces are unaffected.
	other := Spec{Name: "lb-y", Files: spec.Files}
	if _, err := e2.Apply(other); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e2, other)
}

// TestReviveAfterDestroy: a workspace whose destroy finished can be applied
// again once revived (a Service whose type went away from LoadBalancer and
// back), in this process and after a restart; not while its destroy is
// still to run.
func TestReviveAfterDestroy(t *testing.T) {
	work := t.TempDir()
	bin, _ := countingBinary(t)
	e := newTestEngine(t, Options{WorkDir: work, Binary: bin})
	spec := Spec{Name: "lb-x", Files: map[string][]byte{"main.tf": []byte(`resource "terraform_data" "a" { input = 1 }`)}}
	if ok, err := e.Revive(spec.Name); !ok || err != nil {
		t.Fatalf("Revive of a workspace never destroyed = %v, %v; want true", ok, err)
	}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.Revive(spec.Name); ok || err != nil {
		t.Fatalf("Revive while the destroy is to run = %v, %v; want false", ok, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := e.Wait(ctx, spec.Name, spec.ContentHash()); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %+v, %v", st, err)
	}
	if ok, err := e.Revive(spec.Name); !ok || err != nil {
		t.Fatalf("Revive after the destroy = %v, %v; want true", ok, err)
	}
	again := Spec{Name: "lb-x", Files: map[string][]byte{"main.tf": []byte(`resource "terraform_data" "a" { input = 2 }`)}}
	if _, err := e.Apply(again); err != nil {
		t.Fatalf("Apply after Revive: %v", err)
	}
	waitApplied(t, e, again)
	// Destroyed again, then revived by the next incarnation.
	if _, err := e.Destroy(again); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(ctx, again.Name, again.ContentHash()); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %+v, %v", st, err)
	}
	e2 := newTestEngine(t, Options{WorkDir: work, Binary: bin})
	if _, err := e2.Apply(spec); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("Apply before Revive after a restart = %v, want ErrDestroyed", err)
	}
	if ok, err := e2.Revive(spec.Name); !ok || err != nil {
		t.Fatalf("Revive after a restart = %v, %v; want true", ok, err)
	}
	if _, err := e2.Apply(spec); err != nil {
		t.Fatalf("Apply after Revive after a restart: %v", err)
	}
	waitApplied(t, e2, spec)
}
