package templates

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/annotations"
)

// TestApprovalDoesNotChangeTheWorkspace: setting tfccm.io/approved-plan on
// a Service must not change the workspace (and so the plan) it approves.
func TestApprovalDoesNotChangeTheWorkspace(t *testing.T) {
	cfg := testConfig(t, baseConfig)
	set := fullSet(t)
	plain, err := set.RenderLoadBalancer(cfg, svc(nil), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	approved, err := set.RenderLoadBalancer(cfg, svc(func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[annotations.ApprovedPlan.Name] = strings.Repeat("a", 64)
	}), testNodes(), Addresses{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Hash != approved.Hash {
		t.Errorf("hash changed by the approval annotation")
	}
	if bytes.Contains(approved.Files[TfvarsFile], []byte(annotations.ApprovedPlan.Name)) {
		t.Errorf("the approval annotation reached the template inputs")
	}
}
