package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/crypto/ssh"
)

// The baremetal_values file: the Helm chart's typed values of the
// baremetal set (its `baremetal` value, as JSON), and the one conversion of
// them into load_balancer settings and address_pool blocks. The chart
// passes the values through untouched (toJson) and never writes them into
// HCL, so no host key or address can break out of a string.

// BaremetalValues are the chart's `baremetal` value: the LB hosts, their
// login, the VIP pools, VRRP and address pools.
type BaremetalValues struct {
	Hosts            []BaremetalHost `json:"hosts"`
	User             string          `json:"user,omitempty"`
	Sudo             bool            `json:"sudo,omitempty"`
	VIPPool          string          `json:"vipPool"`
	VIPPool6         string          `json:"vipPool6,omitempty"`
	Interface        string          `json:"interface"`
	VirtualRouterIDs string          `json:"virtualRouterIds,omitempty"`
	AdvertInt        int             `json:"advertInt,omitempty"`
	AddressPools     []BaremetalPool `json:"addressPools,omitempty"`
	// SSHPrivateKeyFile is where the chart mounts sshKey (the path, never
	// the key).
	SSHPrivateKeyFile string `json:"sshPrivateKeyFile"`
}

// BaremetalHost is one LB host of the chart's baremetal.hosts.
type BaremetalHost struct {
	Name     string `json:"name"`
	Address  string `json:"address"`
	Address6 string `json:"address6,omitempty"`
	Port     int    `json:"port,omitempty"`
	HostKey  string `json:"hostKey"`
	Priority int    `json:"priority,omitempty"`
	Retired  bool   `json:"retired,omitempty"`
}

// BaremetalPool is one of the chart's baremetal.addressPools: an
// address_pool block (pools.go) spelt as chart values.
type BaremetalPool struct {
	Name                  string   `json:"name"`
	Addresses             []string `json:"addresses"`
	AutoAssign            *bool    `json:"autoAssign,omitempty"`
	AvoidBuggyIPs         bool     `json:"avoidBuggyIPs,omitempty"`
	Priority              int      `json:"priority,omitempty"`
	Namespaces            []string `json:"namespaces,omitempty"`
	NamespaceSelectors    []string `json:"namespaceSelectors,omitempty"`
	ServiceSelectors      []string `json:"serviceSelectors,omitempty"`
	ShareAcrossNamespaces bool     `json:"shareAcrossNamespaces,omitempty"`
}

var (
	hostNameRE    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,18}[a-z0-9])?$`)
	loginRE       = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	interfaceRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$`)
	routerIDsRE   = regexp.MustCompile(`^([0-9]{1,3})-([0-9]{1,3})$`)
	errBaremetalV = "Invalid baremetal values"
)

// DecodeBaremetalValues decodes and checks the chart's baremetal values
// (JSON): an unknown key or a bad value is an error naming its key
// (baremetal.hosts[1].address), never quoting a host key.
func DecodeBaremetalValues(src []byte) (*BaremetalValues, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	var v BaremetalValues
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("baremetal: %w", err)
	}
	if errs := v.check(); len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return &v, nil
}

// check reports every bad value, each naming its key.
func (v *BaremetalValues) check() []string {
	var errs []string
	bad := func(key, format string, a ...any) {
		errs = append(errs, "baremetal."+key+": "+fmt.Sprintf(format, a...))
	}
	if len(v.Hosts) == 0 {
		bad("hosts", "name at least one LB host ({name, address, hostKey})")
	}
	seen := map[string]bool{}
	for i, h := range v.Hosts {
		errs = append(errs, h.check(fmt.Sprintf("hosts[%d]", i), seen)...)
	}
	if v.User != "" && !loginRE.MatchString(v.User) {
		bad("user", "not a login name (1-32 of a-z, 0-9, '_' and '-', starting with a letter or '_')")
	}
	if v.User != "" && v.User != "root" && !v.Sudo {
		bad("sudo", "must be true for the login %s, which is not root (lbhost runs every command through sudo -n; lbhost/hostfiles/sudoers.d/tfccm)", v.User)
	}
	if p, err := netip.ParsePrefix(v.VIPPool); err != nil || !p.Addr().Is4() || p.Masked() != p || p.Bits() < 8 || p.Bits() > 30 {
		bad("vipPool", "must be an IPv4 network CIDR with a prefix length from 8 to 30, such as 192.168.10.128/25")
	}
	if v.VIPPool6 != "" {
		if p, err := netip.ParsePrefix(v.VIPPool6); err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Masked() != p || p.Bits() < 40 || p.Bits() > 126 || p.String() != v.VIPPool6 {
			bad("vipPool6", "must be an IPv6 network CIDR in canonical form with a prefix length from 40 to 126, such as fd00:5::/112")
		}
	}
	if !interfaceRE.MatchString(v.Interface) {
		bad("interface", "must be the interface name VRRP adverts go out on, such as eth0")
	}
	if v.VirtualRouterIDs != "" && !validRouterIDs(v.VirtualRouterIDs) {
		bad("virtualRouterIds", "must be <first>-<last> with 1 <= first <= last <= 255, such as 50-99")
	}
	if v.AdvertInt < 0 || v.AdvertInt > 255 {
		bad("advertInt", "must be from 1 to 255 seconds")
	}
	if !strings.HasPrefix(v.SSHPrivateKeyFile, "/") {
		bad("sshPrivateKeyFile", "must be an absolute path (the chart sets it from sshKey: set sshKey.existingSecret)")
	}
	for i, p := range v.AddressPools {
		if p.Name == "" {
			bad(fmt.Sprintf("addressPools[%d].name", i), "is required")
		}
		if len(p.Addresses) == 0 {
			bad(fmt.Sprintf("addressPools[%d].addresses", i), "name at least one CIDR or range (first-last)")
		}
	}
	return errs
}

func (h BaremetalHost) check(key string, seen map[string]bool) []string {
	var errs []string
	bad := func(sub, format string, a ...any) {
		errs = append(errs, "baremetal."+key+sub+": "+fmt.Sprintf(format, a...))
	}
	if !hostNameRE.MatchString(h.Name) {
		bad(".name", "must be 1-20 lowercase letters, digits or '-'")
	} else if seen[h.Name] {
		bad(".name", "%s is named twice", h.Name)
	}
	seen[h.Name] = true
	if a, err := netip.ParseAddr(h.Address); err != nil || !a.Is4() {
		bad(".address", "must be an IPv4 address (SSH and the VRRP unicast source)")
	}
	if h.Address6 != "" {
		if a, err := netip.ParseAddr(h.Address6); err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" || a.String() != h.Address6 {
			bad(".address6", "must be an IPv6 address in canonical form (lowercase, shortest), such as fd00::11")
		}
	}
	if h.Port < 0 || h.Port > 65535 {
		bad(".port", "must be from 1 to 65535")
	}
	if h.Priority < 0 || h.Priority > 254 {
		bad(".priority", "must be from 1 to 254")
	}
	if k, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(h.HostKey)); err != nil || k == nil || len(rest) > 0 || strings.ContainsAny(h.HostKey, "\r\n") {
		bad(".hostKey", "must be the host's public key on one line in authorized_keys format, such as \"ssh-ed25519 AAAA...\" (ssh-keyscan -t ed25519 HOST, without the host name)")
	}
	return errs
}

func validRouterIDs(s string) bool {
	m := routerIDsRE.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	first, _ := strconv.Atoi(m[1])
	last, _ := strconv.Atoi(m[2])
	return first >= 1 && first <= last && last <= 255
}

// Settings is load_balancer.settings of the baremetal set for v: what the
// same values written in HCL give (templates/baremetal/README.md).
func (v *BaremetalValues) Settings() cty.Value {
	hosts := map[string]cty.Value{}
	for _, h := range v.Hosts {
		attrs := map[string]cty.Value{"address": cty.StringVal(h.Address), "host_key": cty.StringVal(h.HostKey)}
		if v.User != "" {
			attrs["user"] = cty.StringVal(v.User)
		}
		if h.Address6 != "" {
			attrs["address6"] = cty.StringVal(h.Address6)
		}
		if h.Port != 0 {
			attrs["ssh_port"] = cty.NumberIntVal(int64(h.Port))
		}
		if h.Priority != 0 {
			attrs["priority"] = cty.NumberIntVal(int64(h.Priority))
		}
		if h.Retired {
			attrs["retired"] = cty.True
		}
		hosts[h.Name] = cty.ObjectVal(attrs)
	}
	s := map[string]cty.Value{
		"hosts":                cty.ObjectVal(hosts),
		"vip_pool":             cty.StringVal(v.VIPPool),
		"vrrp_interface":       cty.StringVal(v.Interface),
		"ssh_private_key_file": cty.StringVal(v.SSHPrivateKeyFile),
	}
	if v.Sudo {
		s["sudo"] = cty.True
	}
	if v.VIPPool6 != "" {
		s["vip_pool6"] = cty.StringVal(v.VIPPool6)
	}
	if v.VirtualRouterIDs != "" {
		s["virtual_router_ids"] = cty.StringVal(v.VirtualRouterIDs)
	}
	if v.AdvertInt != 0 {
		s["advert_int"] = cty.NumberIntVal(int64(v.AdvertInt))
	}
	return cty.ObjectVal(s)
}

// Pools are v's address pools as address_pool blocks (checked with the
// cloud config's own blocks by finishPools).
func (v *BaremetalValues) Pools() []AddressPool {
	var out []AddressPool
	for _, p := range v.AddressPools {
		out = append(out, AddressPool{
			Name: p.Name, Addresses: p.Addresses, AutoAssign: p.AutoAssign, AvoidBuggyIPs: p.AvoidBuggyIPs,
			Priority: p.Priority, Namespaces: p.Namespaces, NamespaceSelectors: p.NamespaceSelectors,
			ServiceSelectors: p.ServiceSelectors, ShareAcrossNamespaces: p.ShareAcrossNamespaces,
		})
	}
	return out
}

// applyBaremetalValues reads the baremetal_values file through read and
// makes it the load_balancer block's settings and extra address pools.
func (c *Config) applyBaremetalValues(body hcl.Body, read func(string) ([]byte, error)) hcl.Diagnostics {
	if c.BaremetalValuesFile == "" {
		return nil
	}
	content, _, _ := body.PartialContent(rootSchema)
	k := &checker{body: body, content: content}
	fail := func(detail string) hcl.Diagnostics {
		k.errAt(at("baremetal_values_file"), errBaremetalV, detail)
		return k.diags
	}
	if c.TemplateSet != "baremetal" {
		return fail(fmt.Sprintf("baremetal_values_file is for template_set = \"baremetal\", not %q.", c.TemplateSet))
	}
	src, err := read(c.BaremetalValuesFile)
	if err != nil {
		return fail(fmt.Sprintf("cannot read %s: %v.", c.BaremetalValuesFile, pathErr(err)))
	}
	v, err := DecodeBaremetalValues(src)
	if err != nil {
		return fail(c.BaremetalValuesFile + ": " + err.Error())
	}
	if c.LoadBalancer == nil {
		c.LoadBalancer = &LoadBalancer{}
	}
	if s := c.LoadBalancer.Settings; s != cty.NilVal && !s.IsNull() {
		return fail("load_balancer.settings is set too: the baremetal values are the settings (set the hosts, pools and VRRP in one place).")
	}
	c.LoadBalancer.Settings = v.Settings()
	c.LoadBalancer.AddressPools = append(c.LoadBalancer.AddressPools, v.Pools()...)
	return nil
}

// pathErr keeps an error's cause without repeating the path it names.
func pathErr(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
