package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// TestConvertMetalLB converts a dump of MetalLB's pools and announcements:
// the golden AddressPools keep each pool's name, addresses and allocation
// rules (selectors in kubectl's syntax), take the one interface and node
// selector of the L2Advertisements announcing them, and carry a comment
// (and a line on stderr) for each thing that did not convert: two
// interfaces, an empty selector, a BGP announcement, a pool nothing
// announces, a name two namespaces use.
func TestConvertMetalLB(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"convert", "metallb", "-f", filepath.Join("testdata", "metallb-dump.yaml")}, &stdout, &stderr); rc != exitOK {
		t.Fatalf("exit %d: %s", rc, stderr.String())
	}
	testkit.Golden(t, filepath.Join("testdata", "convert-metallb.golden.yaml"), stdout.Bytes())
	for _, want := range []string{
		"IPAddressPool metallb-system/web: announced on interfaces eth0, eth1",
		"IPAddressPool metallb-system/vlan20: serviceAllocation.serviceSelectors[0] is empty",
		"IPAddressPool metallb-system/routed: announced by BGPAdvertisement routed",
		"IPAddressPool metallb-system/spare: no L2Advertisement or BGPAdvertisement announces it",
		`IPAddressPool other-metallb/web: skipped: AddressPools are cluster-wide and metallb-system/web has the name "web"`,
	} {
		if !strings.Contains(stderr.String(), "note: "+want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Count(stdout.String(), "kind: AddressPool") != 5 {
		t.Errorf("want 5 AddressPools:\n%s", stdout.String())
	}

	// What it writes is AddressPools tfccm serves as they are.
	pools, err := readPoolDump(filepath.Join("testdata", "convert-metallb.golden.yaml"), false)
	if err != nil || len(pools) != 5 {
		t.Fatalf("reading the output back: %d pools, %v", len(pools), err)
	}
	for _, p := range pools {
		if _, err := p.ToConfig(); err != nil {
			t.Errorf("converted pool %s: %v", p.Name, err)
		}
	}

	// With compat, the dump's MetalLB pools are read as the controller
	// reads them: the same five, MetalLB's (namespaced).
	live, err := readPoolDump(filepath.Join("testdata", "metallb-dump.yaml"), true)
	if err != nil || len(live) != 5 || live[0].Namespace != "metallb-system" {
		t.Errorf("the dump's pools with compat: %d, %v", len(live), err)
	}

	// No pool: an error, not an empty file.
	stdout.Reset()
	stderr.Reset()
	if rc := run([]string{"convert", "metallb", "-f", filepath.Join("testdata", "svc.yaml")}, &stdout, &stderr); rc != exitError || !strings.Contains(stderr.String(), "no MetalLB IPAddressPool") {
		t.Errorf("a dump without pools: exit %d, %s", rc, stderr.String())
	}
}
