package workspace

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestDestroyAfterFailedFirstApply: a workspace whose first plan failed on
// its inputs holds no resources; destroying it must not run `tofu destroy`
// (which would fail on the same inputs and strand a Service's finalizer).
func TestDestroyAfterFailedFirstApply(t *testing.T) {
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin})
	spec := Spec{Name: "bad", Files: map[string][]byte{"main.tf": []byte(`variable "port" {
  type = number
  validation {
    condition     = var.port < 10
    error_message = "port must be below 10."
  }
}

resource "terraform_data" "x" {
  input = var.port
}
`), "tfccm.auto.tfvars": []byte("port = 53\n")}}
	spec.Hash = spec.ContentHash()
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Wait(ctx, "bad", spec.Hash); err == nil {
		t.Fatal("invalid input applied")
	}
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	st, err := e.Wait(ctx, "bad", spec.Hash)
	if err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %v, %+v", err, st)
	}
	if n := count(calls(), "destroy"); n != 0 {
		t.Errorf("tofu destroy ran %d times on an empty state", n)
	}
	if _, err := os.Stat(e.Dir("bad")); !os.IsNotExist(err) {
		t.Errorf("workspace dir left: %v", err)
	}
}

// TestWrittenReturnsTheAppliedFiles: the files the engine wrote (not tofu's
// own) come back with their modes, so a workspace can be destroyed after
// its inputs stopped rendering.
func TestWrittenReturnsTheAppliedFiles(t *testing.T) {
	e := newTestEngine(t, Options{})
	spec := testSpec("written", 3, 0)
	spec.Files["hook.sh"] = []byte("#!/bin/sh\n")
	spec.Modes = map[string]os.FileMode{"hook.sh": 0o755}
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)
	got, err := e.Written("written")
	if err != nil {
		t.Fatal(err)
	}
	if got.ContentHash() != spec.ContentHash() {
		t.Errorf("written files differ from the applied spec: %v", got.Paths())
	}
	if _, err := e.Written("never-applied"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown workspace: %v", err)
	}
}
