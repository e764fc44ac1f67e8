package clouds

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/instances"
)

// addrs renders an instance's addresses as "Type address" strings.
func addrs(in *instances.Instance) string {
	var out []string
	for _, a := range in.Addresses {
		out = append(out, a.Type+" "+a.Address)
	}
	return strings.Join(out, ",")
}

// TestProxmox: instances only (no load balancer product; see the set's
// README). VMs map like sergelogvinov's proxmox-cloud-controller-manager.
func TestProxmox(t *testing.T) {
	runCloud(t, cloud{
		set:      "proxmox",
		provider: "proxmox",
		only:     []string{"proxmox_virtual_environment_vm"},
		infra:    "testdata/proxmox/infra",
		infraFixture: map[string]map[string]any{
			"proxmox_virtual_environment_vm#node-a": {"ipv4_addresses": [][]string{{"127.0.0.1"}, {"10.0.10.2"}}, "ipv6_addresses": [][]string{{"::1"}, {"fe80::1", "fd00:10::2"}}},
			"proxmox_virtual_environment_vm#node-b": {"ipv4_addresses": [][]string{{"127.0.0.1"}, {"10.0.10.3"}}, "ipv6_addresses": [][]string{}},
			"proxmox_virtual_environment_vm#node-c": {"ipv4_addresses": [][]string{}, "ipv6_addresses": [][]string{}},
		},
		wantInstances: func(t *testing.T, got []*instances.Instance) {
			if len(got) != 3 {
				t.Fatalf("%d instances, want 3 (the template is none): %+v", len(got), got)
			}
			want := []struct{ name, id, zone, addrs string }{
				{"node-a", "proxmox://cluster-1/101", "pve1", "InternalIP 10.0.10.2,InternalIP fd00:10::2,Hostname node-a"},
				{"node-b", "proxmox://cluster-1/102", "rack-2", "InternalIP 10.0.10.3,Hostname node-b"},
				{"node-c", "proxmox://cluster-1/103", "pve2", "Hostname node-c"},
			}
			for i, in := range got {
				w := want[i]
				if in.Name != w.name || in.ProviderID != w.id || in.InstanceType != "4VCPU-8GB" || in.Zone != w.zone || in.Region != "cluster-1" ||
					in.Shutdown != (w.name == "node-c") || addrs(in) != w.addrs {
					t.Errorf("instance %d: %+v (addresses %s), want %+v", i, in, addrs(in), w)
				}
			}
		},
	})
}

// TestVSphere: instances only (no load balancer product; see the set's
// README). VMs map like the vSphere cloud provider (CPI).
func TestVSphere(t *testing.T) {
	runCloud(t, cloud{
		set:      "vsphere",
		provider: "vsphere",
		only:     []string{"vsphere_virtual_machine"},
		infra:    "testdata/vsphere/infra",
		infraFixture: map[string]map[string]any{
			"vsphere_virtual_machine":        {"power_state": "poweredOn", "default_ip_address": "", "guest_ip_addresses": []string{}},
			"vsphere_virtual_machine#node-a": {"uuid": "4213A1B2-0000-4000-8000-00000000000A", "default_ip_address": "10.0.10.2", "guest_ip_addresses": []string{"10.0.10.2", "fe80::250:56ff:fe00:1", "fd00:10::2"}},
			"vsphere_virtual_machine#node-c": {"power_state": "poweredOff"},
		},
		wantInstances: func(t *testing.T, got []*instances.Instance) {
			if len(got) != 3 {
				t.Fatalf("%d instances, want 3: %+v", len(got), got)
			}
			for i, in := range got {
				name := []string{"node-a", "node-b", "node-c"}[i]
				if in.Name != name || !regexp.MustCompile(`^vsphere://[0-9a-z-]+$`).MatchString(in.ProviderID) ||
					in.InstanceType != "vsphere-vm.cpu-4.mem-16gb.os-ubuntu" || in.Zone != []string{"zone-a", "zone-b", "zone-b"}[i] ||
					in.Region != "eu-dc1" || in.Shutdown != (name == "node-c") {
					t.Errorf("instance %d: %+v", i, in)
				}
			}
			if got[0].ProviderID != "vsphere://4213a1b2-0000-4000-8000-00000000000a" || addrs(got[0]) != "InternalIP 10.0.10.2,InternalIP fd00:10::2,Hostname node-a" {
				t.Errorf("node-a: %s, addresses %s", got[0].ProviderID, addrs(got[0]))
			}
			if addrs(got[1]) != "Hostname node-b" {
				t.Errorf("node-b without guest addresses: %s", addrs(got[1]))
			}
		},
	})
}
