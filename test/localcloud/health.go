package localcloud

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ProbeHealth plans the health module (templates.HealthDir) copied from
// src into dir beside a load balancer workspace, as tfccm's health loop
// does: the workspace's inputs file (inputs, in the workspace) linked in,
// init on the first probe, a plan without a lock; and returns its
// `backends` output as node name → healthy.
func ProbeHealth(ctx context.Context, tofu, src, dir, inputs string) (map[string]bool, error) {
	if _, err := os.Stat(filepath.Join(dir, ".terraform")); err != nil {
		if err := CopyModule(src, dir); err != nil {
			return nil, err
		}
		if err := os.Symlink(inputs, filepath.Join(dir, filepath.Base(inputs))); err != nil && !os.IsExist(err) {
			return nil, err
		}
		if _, err := RunTofu(ctx, tofu, dir, "init", "-input=false", "-no-color"); err != nil {
			return nil, err
		}
	}
	if _, err := RunTofu(ctx, tofu, dir, "plan", "-input=false", "-no-color", "-lock=false", "-out=probe.plan"); err != nil {
		return nil, err
	}
	out, err := RunTofu(ctx, tofu, dir, "show", "-json", "probe.plan")
	if err != nil {
		return nil, err
	}
	// Only the backends output (a module may have others, e.g. hosts).
	var plan struct {
		PlannedValues struct {
			Outputs struct {
				Backends struct {
					Value []struct {
						Node    string `json:"node"`
						Healthy bool   `json:"healthy"`
					} `json:"value"`
				} `json:"backends"`
			} `json:"outputs"`
		} `json:"planned_values"`
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		return nil, fmt.Errorf("health plan: %w", err)
	}
	got := map[string]bool{}
	for _, b := range plan.PlannedValues.Outputs.Backends.Value {
		got[b.Node] = b.Healthy
	}
	return got, nil
}
