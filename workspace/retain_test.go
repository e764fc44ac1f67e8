package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestForgetSpec: the forget configuration keeps what configures the
// providers (terraform, provider and variable blocks, the locals that read
// no dropped block) and every non-.tf file, drops everything else, and
// writes a removed block with destroy = false for every resource and
// module call; JSON configuration is refused.
func TestForgetSpec(t *testing.T) {
	main := `terraform {
  required_providers {
    lbhost = { source = "tfccm.io/tfccm/lbhost" }
  }
}

variable "settings" {
  type = object({ hosts = map(string) })
}

locals {
  hosts = { for k, v in var.settings.hosts : k => v }
  ssh   = { for k, v in local.hosts : k => { host = v } }
  vip   = lbhost_vip.this.address
  twice = local.vip
}

provider "lbhost" {
  for_each = local.ssh
  alias    = "host"
  host     = each.value.host
}

data "lbhost_health" "x" {}

resource "lbhost_vip" "this" {
  pool = "a"
}

import {
  to = lbhost_vip.this
  id = "x"
}

output "ingress" {
  value = local.vip
}

check "up" {
  assert {
    condition     = true
    error_message = "down"
  }
}
`
	more := "resource \"lbhost_frontend\" \"port\" {\n  for_each = local.ssh\n}\n\nmodule \"extra\" {\n  source = \"./extra\"\n}\n"
	spec := Spec{Name: "lb", Files: map[string][]byte{
		"main.tf": []byte(main), "more.tf": []byte(more), "tfccm.auto.tfvars": []byte("settings = {}\n"),
		"extra/main.tf": []byte("resource \"terraform_data\" \"x\" {}\n"), "health/check.sh": []byte("#!/bin/sh\n"),
	}}
	got, err := ForgetSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	m := string(got.Files["main.tf"])
	for _, want := range []string{"terraform {", `variable "settings"`, `provider "lbhost"`, "hosts =", "ssh "} {
		if !strings.Contains(m, want) {
			t.Errorf("main.tf lost %q:\n%s", want, m)
		}
	}
	for _, gone := range []string{"resource ", "data ", "import ", "output ", "check ", "vip ", "twice"} {
		if strings.Contains(m, gone) {
			t.Errorf("main.tf keeps %q:\n%s", gone, m)
		}
	}
	if strings.Contains(string(got.Files["more.tf"]), "resource") || strings.Contains(string(got.Files["more.tf"]), "module") {
		t.Errorf("more.tf keeps blocks:\n%s", got.Files["more.tf"])
	}
	for _, p := range []string{"tfccm.auto.tfvars", "extra/main.tf", "health/check.sh"} {
		if string(got.Files[p]) != string(spec.Files[p]) {
			t.Errorf("%s changed: %q", p, got.Files[p])
		}
	}
	want := []string{"from = lbhost_frontend.port", "from = lbhost_vip.this", "from = module.extra"}
	f := string(got.Files[ForgetFile])
	for _, w := range want {
		if !strings.Contains(f, w) {
			t.Errorf("%s lacks %q:\n%s", ForgetFile, w, f)
		}
	}
	if n := strings.Count(f, "destroy = false"); n != len(want) {
		t.Errorf("%s has %d destroy = false, want %d:\n%s", ForgetFile, n, len(want), f)
	}
	if got.Hash != got.ContentHash() || got.Hash == spec.ContentHash() {
		t.Error("the forget configuration's hash is not its own")
	}

	spec.Files["x.tf.json"] = []byte("{}")
	if _, err := ForgetSpec(spec); err == nil || !strings.Contains(err.Error(), "x.tf.json") {
		t.Errorf("JSON configuration: %v", err)
	}
}

// TestRetainOnDelete: a destroy with Retain forgets the resources (their
// destroy-time provisioner never runs), tells OnApplyStart "to forget" and
// nothing destroyed, and removes the state and directory as a destroy does;
// the same workspace destroyed without Retain runs the provisioner.
func TestRetainOnDelete(t *testing.T) {
	for _, retain := range []bool{true, false} {
		name := map[bool]string{true: "retain", false: "destroy"}[retain]
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			var mu sync.Mutex
			var summaries []string
			e := newTestEngine(t, Options{WorkDir: work, OnApplyStart: func(_, s string) {
				mu.Lock()
				defer mu.Unlock()
				summaries = append(summaries, s)
			}})
			spec := Spec{Name: name, Files: map[string][]byte{"main.tf": []byte(destroyModule + "\noutput \"ingress\" {\n  value = terraform_data.d.output\n}\n")}}
			spec.Hash = spec.ContentHash()
			if _, err := e.Apply(spec); err != nil {
				t.Fatal(err)
			}
			waitApplied(t, e, spec)
			spec.Retain = retain
			if _, err := e.Destroy(spec); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			st, err := e.Wait(ctx, name, spec.Hash)
			if err != nil || st.Phase != PhaseDestroyed {
				t.Fatalf("delete: %v, %+v", err, st)
			}
			_, err = os.Stat(filepath.Join(work, "destroyed.mark"))
			if destroyed := err == nil; destroyed == retain {
				t.Errorf("retain %v: the resource's destroy ran: %v", retain, destroyed)
			}
			if _, err := os.Stat(e.Dir(name)); !os.IsNotExist(err) {
				t.Errorf("workspace dir left: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			// The first apply's summary, then the delete's.
			if last := summaries[len(summaries)-1]; retain && (len(summaries) != 2 || last != "0 to add, 0 to change, 0 to destroy, 1 to forget") {
				t.Errorf("OnApplyStart was told %q, want the delete's plan as 1 to forget and 0 to destroy", summaries)
			}
		})
	}
}

// TestReviewRetainNeedsApproval: in review mode a retained delete is a
// published plan like a destroy, which forgets (and destroys nothing);
// nothing happens before its approval, and after it the resources are
// forgotten (their destroy-time provisioner never runs) and the workspace
// removed.
func TestReviewRetainNeedsApproval(t *testing.T) {
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work, Review: true})
	spec := reviewSpec(3)
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	if err := e.Approve("rv", awaitPlan(t, e, spec).Hash); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, spec)

	spec.Retain = true
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	p := awaitPlan(t, e, spec)
	if !p.Destroy || p.Remove != 0 || p.Forget == 0 || !strings.HasSuffix(p.Summary(), "0 to destroy, "+strconv.Itoa(p.Forget)+" to forget") {
		t.Errorf("retain plan %+v (%s), want only forgets", p, p.Summary())
	}
	if _, err := os.Stat(e.Dir("rv")); err != nil {
		t.Fatalf("workspace removed before approval: %v", err)
	}
	if err := e.Approve("rv", p.Hash); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := e.Wait(ctx, "rv", spec.Hash); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("retain after approval: %v, %+v", err, st)
	}
	if _, err := os.Stat(filepath.Join(work, "destroyed.mark")); !os.IsNotExist(err) {
		t.Errorf("a retained resource was destroyed: %v", err)
	}
	if _, err := os.Stat(e.Dir("rv")); !os.IsNotExist(err) {
		t.Errorf("workspace dir left: %v", err)
	}
}
