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
