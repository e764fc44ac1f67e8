package fleet

import (
	"bytes"
	"testing"

	"github.com/tfccm/tfccm/gate/policy"
	"github.com/tfccm/tfccm/internal/testkit"
)

// sample has a row of each kind: unchanged, changed with a replacement
// and a denial, new, held by a closed change window, an adoption, failed (with Markdown syntax in its message),
// and the BGP peering's destroy.
func sample() *Report {
	return &Report{Set: "hcloud", Rows: []Row{
		{Target: "blog/db", Namespace: "blog", Name: "db", Module: "loadbalancer", Workspace: "lb-prod-1"},
		{Target: "shop/api", Namespace: "shop", Name: "api", Module: "loadbalancer.internal", Workspace: "lb-prod-2", Add: 1, Change: 1, Destroy: 1,
			Replaced: []string{"hcloud_load_balancer.this"}, Findings: []policy.Finding{{Rule: "no-public-ip-replacement", Action: "deny", Message: "replaces hcloud_load_balancer.this, which holds a public address"}}},
		{Target: "shop/new", Namespace: "shop", Name: "new", Module: "loadbalancer", Workspace: "lb-prod-3", Add: 3, New: true,
			Findings: []policy.Finding{{Rule: "few-destroys", Action: "warn", Message: "3 resources"}}},
		{Target: "shop/late", Namespace: "shop", Name: "late", Module: "loadbalancer", Workspace: "lb-prod-4", Change: 1,
			Held: "not applied: change window business-hours is closed; the next opens at 2026-11-26T08:00:00Z"},
		{Target: "shop/old", Namespace: "shop", Name: "old", Module: "loadbalancer", Workspace: "lb-prod-5", Change: 1, New: true, Import: 2,
			Imported: []string{"hcloud_load_balancer.this", "hcloud_load_balancer_service.port[\"80\"]"}},
		{Target: "shop/bad", Namespace: "shop", Name: "bad", Error: "render: annotation tfccm.io/vars: <x> | `y`"},
		{Target: "bgp-peering", Name: "bgp-peering", Workspace: "bgp-peering", Module: "bgp", Retired: true, Destroy: 2,
			Note: "destroyed: the candidate renders no BGP peering and no Service of the bgp variant is left"},
	}}
}

// sampleKept is the peering kept for the Services that still use it.
func sampleKept() *Report {
	return &Report{Set: "nodes", Rows: []Row{
		{Target: "bgp-peering", Name: "bgp-peering", Workspace: "bgp-peering", Module: "bgp", Retired: true, Kept: true, Later: 2,
			Note: "kept: 1 Service(s) of the bgp variant still announce over it (shop/web); its destroy (-2) follows once none is left"},
	}}
}

func TestReportFormats(t *testing.T) {
	for name, write := range map[string]func(*Report, *bytes.Buffer) error{
		"text":     func(r *Report, b *bytes.Buffer) error { return r.WriteText(b) },
		"markdown": func(r *Report, b *bytes.Buffer) error { return r.WriteMarkdown(b) },
		"json":     func(r *Report, b *bytes.Buffer) error { return r.WriteJSON(b) },
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := write(sample(), &b); err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, "testdata/report."+name, b.Bytes())
			b.Reset()
			if err := write(sampleKept(), &b); err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, "testdata/report-kept."+name, b.Bytes())
		})
	}
}

func TestCounts(t *testing.T) {
	if got, want := sample().Counts(), (Counts{Workspaces: 7, Changed: 5, Adoptions: 1, Denied: 1, Errors: 1}); got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
	// A kept peering changes nothing now: tfccm plan exits 0 for it.
	if got, want := sampleKept().Counts(), (Counts{Workspaces: 1}); got != want {
		t.Errorf("kept: counts = %+v, want %+v", got, want)
	}
}
