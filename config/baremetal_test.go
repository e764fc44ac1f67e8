package config

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/zclconf/go-cty/cty"
)

const (
	keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFn3B0tNsg4UhmJRQbcVPMsXWe9J6fuk1Ip3nRGY4r5u"
	keyB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKvE8FWbZKN5n2cMVG0sIrBwVNHo86HycNE0m6CwH3Vu"
)

// baremetalJSON is a valid baremetal.json with edit applied to it.
func baremetalJSON(t *testing.T, edit func(m map[string]any)) []byte {
	t.Helper()
	m := map[string]any{
		"hosts": []any{
			map[string]any{"name": "lb-a", "address": "192.168.10.2", "hostKey": keyA},
			map[string]any{"name": "lb-b", "address": "192.168.10.3", "hostKey": keyB},
		},
		"user": "tfccm", "sudo": true, "vipPool": "192.168.10.128/25", "interface": "eth0",
		"virtualRouterIds": "50-99", "sshPrivateKeyFile": "/etc/tfccm/ssh/id_ed25519",
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func host(m map[string]any, i int) map[string]any { return m["hosts"].([]any)[i].(map[string]any) }

const baremetalHCL = "cluster_name = \"prod\"\ntemplate_set = \"baremetal\"\nbaremetal_values_file = \"baremetal.json\"\n"

// TestBaremetalValuesAreTheSettingsHCLGives: the typed values become the
// load_balancer settings and address pools the same cloud config written in
// HCL gives.
func TestBaremetalValuesAreTheSettingsHCLGives(t *testing.T) {
	values := baremetalJSON(t, func(m map[string]any) {
		host(m, 0)["port"] = 2222
		host(m, 0)["address6"] = "fd00:10::2"
		host(m, 1)["address6"] = "fd00:10::3"
		host(m, 1)["retired"] = true
		m["vipPool6"] = "fd00:10::1:0/112"
		m["advertInt"] = 2
		m["addressPools"] = []any{map[string]any{"name": "web", "addresses": []string{"192.168.10.144/28"}, "autoAssign": false},
			map[string]any{"name": "vlan20", "addresses": []string{"10.0.20.64/26"},
				"network": map[string]any{"interface": "vlan20", "hosts": []string{"lb-a"}, "subnet": "10.0.20.0/24"}}}
	})
	got, err := ParseFS(fstest.MapFS{"cloud.hcl": {Data: []byte(baremetalHCL)}, "baremetal.json": {Data: values}}, "cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse([]byte(`cluster_name = "prod"
template_set = "baremetal"
load_balancer {
  settings = {
    hosts = {
      lb-a = { address = "192.168.10.2", user = "tfccm", host_key = "`+keyA+`", ssh_port = 2222, address6 = "fd00:10::2" }
      lb-b = { address = "192.168.10.3", user = "tfccm", host_key = "`+keyB+`", address6 = "fd00:10::3", retired = true }
    }
    sudo                 = true
    vip_pool             = "192.168.10.128/25"
    vip_pool6            = "fd00:10::1:0/112"
    vrrp_interface       = "eth0"
    virtual_router_ids   = "50-99"
    advert_int           = 2
    ssh_private_key_file = "/etc/tfccm/ssh/id_ed25519"
  }
  address_pool "web" {
    addresses   = ["192.168.10.144/28"]
    auto_assign = false
  }
}
`), "want.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !got.LoadBalancer.Settings.RawEquals(want.LoadBalancer.Settings) {
		t.Errorf("settings\n got %#v\nwant %#v", got.LoadBalancer.Settings, want.LoadBalancer.Settings)
	}
	if len(got.LoadBalancer.AddressPools) != 2 || got.LoadBalancer.AddressPools[0].Ranges[0] != want.LoadBalancer.AddressPools[0].Ranges[0] ||
		*got.LoadBalancer.AddressPools[0].AutoAssign {
		t.Fatalf("address pools %+v", got.LoadBalancer.AddressPools)
	}
	// A pool on another segment (chart values' network, as the block).
	if n := got.LoadBalancer.AddressPools[1].Network; n == nil || n.Interface != "vlan20" || strings.Join(n.Hosts, ",") != "lb-a" || n.Prefix.String() != "10.0.20.0/24" {
		t.Errorf("vlan20's network %+v, want interface vlan20, hosts lb-a, subnet 10.0.20.0/24", n)
	}
}

// TestBaremetalValuesLoadFromTheConfigDirectory: Load reads
// baremetal_values_file beside the cloud config, as the pod mounts both.
func TestBaremetalValuesLoadFromTheConfigDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/cloud.hcl", baremetalHCL)
	writeFile(t, dir+"/baremetal.json", string(baremetalJSON(t, nil)))
	c, err := Load(dir + "/cloud.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LoadBalancer.Settings.GetAttr("vrrp_interface"); !got.RawEquals(cty.StringVal("eth0")) {
		t.Errorf("vrrp_interface = %#v", got)
	}
}

// TestBadBaremetalValues: every bad value is refused with an error naming
// its key, and a host key never appears in an error.
func TestBadBaremetalValues(t *testing.T) {
	for _, tc := range []struct {
		name, hcl string
		edit      func(m map[string]any)
		want      string
	}{
		{"misspelt key", "", func(m map[string]any) { m["vipPol"] = "10.0.0.0/24" }, `unknown field "vipPol"`},
		{"no hosts", "", func(m map[string]any) { m["hosts"] = []any{} }, "baremetal.hosts: name at least one LB host"},
		{"host name", "", func(m map[string]any) { host(m, 1)["name"] = "LB_B" }, "baremetal.hosts[1].name: must be 1-20"},
		{"host twice", "", func(m map[string]any) { host(m, 1)["name"] = "lb-a" }, "baremetal.hosts[1].name: lb-a is named twice"},
		{"address", "", func(m map[string]any) { host(m, 0)["address"] = "lb-a.example" }, "baremetal.hosts[0].address: must be an IPv4 address"},
		{"address6", "", func(m map[string]any) { host(m, 0)["address6"] = "FD00::1" }, "baremetal.hosts[0].address6: must be an IPv6 address in canonical form"},
		{"port", "", func(m map[string]any) { host(m, 0)["port"] = 70000 }, "baremetal.hosts[0].port: must be from 1 to 65535"},
		{"port type", "", func(m map[string]any) { host(m, 0)["port"] = "22" }, "hosts.port of type int"},
		{"host key", "", func(m map[string]any) { host(m, 1)["hostKey"] = "ssh-ed25519 AAAA\"}\n${x}" }, "baremetal.hosts[1].hostKey: must be the host's public key"},
		{"host key with options", "", func(m map[string]any) { host(m, 1)["hostKey"] = `command="true" ` + keyB }, "baremetal.hosts[1].hostKey"},
		{"host key two lines", "", func(m map[string]any) { host(m, 1)["hostKey"] = keyA + "\n" + keyB }, "baremetal.hosts[1].hostKey"},
		{"no sudo", "", func(m map[string]any) { m["sudo"] = false }, "baremetal.sudo: must be true for the login tfccm"},
		{"user", "", func(m map[string]any) { m["user"] = "tfccm; rm -rf /" }, "baremetal.user: not a login name"},
		{"vip pool", "", func(m map[string]any) { m["vipPool"] = "192.168.10.129/25" }, "baremetal.vipPool: must be an IPv4 network CIDR"},
		{"vip pool6", "", func(m map[string]any) { m["vipPool6"] = "10.0.0.0/24" }, "baremetal.vipPool6: must be an IPv6 network CIDR"},
		{"interface", "", func(m map[string]any) { m["interface"] = "eth0 up" }, "baremetal.interface: must be the interface name"},
		{"router ids", "", func(m map[string]any) { m["virtualRouterIds"] = "99-50" }, "baremetal.virtualRouterIds: must be <first>-<last>"},
		{"advert", "", func(m map[string]any) { m["advertInt"] = 300 }, "baremetal.advertInt: must be from 1 to 255"},
		{"key file", "", func(m map[string]any) { delete(m, "sshPrivateKeyFile") }, "baremetal.sshPrivateKeyFile: must be an absolute path"},
		{"pool", "", func(m map[string]any) { m["addressPools"] = []any{map[string]any{"name": "web"}} }, "baremetal.addressPools[0].addresses"},
		{"pool outside the checks of address_pool", "", func(m map[string]any) {
			m["addressPools"] = []any{map[string]any{"name": "web", "addresses": []string{"10.0.0.0/33"}}}
		}, `load_balancer.address_pool "web"`},
		{"not the baremetal set", `template_set = "hcloud"`, nil, `baremetal_values_file is for template_set = "baremetal", not "hcloud"`},
		{"settings twice", "load_balancer {\n  settings = { vip_pool = \"10.0.0.0/24\" }\n}", nil, "load_balancer.settings is set too"},
		{"no file", "", func(m map[string]any) { m["missing"] = true }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := baremetalHCL
			if strings.HasPrefix(tc.hcl, "template_set") {
				src = strings.Replace(src, "template_set = \"baremetal\"", tc.hcl, 1)
			} else {
				src += tc.hcl
			}
			fsys := fstest.MapFS{"cloud.hcl": {Data: []byte(src)}, "baremetal.json": {Data: baremetalJSON(t, tc.edit)}}
			if tc.want == "" {
				delete(fsys, "baremetal.json")
				tc.want = "cannot read baremetal.json"
			}
			_, err := ParseFS(fsys, "cloud.hcl")
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "AAAAC3") || strings.Contains(err.Error(), "${x}") {
				t.Errorf("error quotes a host key: %q", err)
			}
		})
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
