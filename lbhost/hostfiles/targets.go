// The hosts Check connects to, from the cloud config's load_balancer
// settings.

package hostfiles

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/tfccm/tfccm/lbhost/transport"
)

// Target is one LB host to check, with the SSH settings and paths the
// baremetal set's provider configuration uses for it.
type Target struct {
	Name             string
	SSH              transport.SSHConfig
	ConfigDir        string
	HAProxy          string
	KeepalivedConfig string
	// BGP: the host runs FRR (settings.bgp is set), so vtysh and
	// frr-reload.py are checked too.
	BGP bool
	// Router: a Linux router of settings.bgp.routers, where lbhost needs
	// FRR's tools alone (Name is "router NAME").
	Router bool
}

// settings is the part of the baremetal set's load_balancer.settings that
// says how to reach the hosts (templates/baremetal/loadbalancer/variables.tf).
type settings struct {
	Hosts map[string]struct {
		Address          string    `json:"address"`
		SSHPort          *flexInt  `json:"ssh_port"`
		User             *string   `json:"user"`
		Sudo             *flexBool `json:"sudo"`
		HostKey          *string   `json:"host_key"`
		Retired          *flexBool `json:"retired"`
		ConfigDir        *string   `json:"config_dir"`
		KeepalivedConfig *string   `json:"keepalived_config"`
	} `json:"hosts"`
	ConfigDir         *string   `json:"config_dir"`
	HAProxy           *string   `json:"haproxy"`
	KeepalivedConfig  *string   `json:"keepalived_config"`
	KnownHostsFile    *string   `json:"known_hosts_file"`
	SSHAgentSocket    *string   `json:"ssh_agent_socket"`
	SSHPrivateKeyFile *string   `json:"ssh_private_key_file"`
	Sudo              *flexBool `json:"sudo"`
	BGP               *struct {
		Routers []struct {
			Name    string    `json:"name"`
			Address string    `json:"address"`
			SSHPort *flexInt  `json:"ssh_port"`
			User    *string   `json:"user"`
			Sudo    *flexBool `json:"sudo"`
			HostKey *string   `json:"host_key"`
			Retired *flexBool `json:"retired"`
		} `json:"routers"`
	} `json:"bgp"`
}

func or[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// TargetsFromSettings reads the hosts (retired ones left out) from the
// baremetal set's load_balancer.settings, with the set's defaults.
func TargetsFromSettings(v cty.Value) ([]Target, error) {
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() {
		return nil, fmt.Errorf("load_balancer.settings is empty: no LB hosts to check")
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, fmt.Errorf("load_balancer.settings: %w", err)
	}
	var s settings
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("load_balancer.settings (the baremetal set's): %w", err)
	}
	if len(s.Hosts) == 0 {
		return nil, fmt.Errorf("load_balancer.settings.hosts is empty: no LB hosts to check")
	}
	var out []Target
	for name, h := range s.Hosts {
		if or(h.Retired, flexBool(false)) {
			continue
		}
		t := Target{
			Name: name,
			SSH: transport.SSHConfig{
				Host: h.Address, Port: int(or(h.SSHPort, flexInt(22))), User: or(h.User, "root"),
				HostKey: or(h.HostKey, ""), AgentSocket: or(s.SSHAgentSocket, ""), PrivateKeyFile: or(s.SSHPrivateKeyFile, ""),
				Sudo: bool(or(h.Sudo, or(s.Sudo, flexBool(false)))),
			},
			ConfigDir:        or(h.ConfigDir, or(s.ConfigDir, DefaultConfigDir)),
			HAProxy:          or(s.HAProxy, "haproxy"),
			KeepalivedConfig: or(h.KeepalivedConfig, or(s.KeepalivedConfig, KeepalivedConfig)),
		}
		if t.SSH.HostKey == "" {
			t.SSH.KnownHostsFile = or(s.KnownHostsFile, "")
		}
		t.BGP = s.BGP != nil
		out = append(out, t)
	}
	if s.BGP != nil {
		for _, r := range s.BGP.Routers {
			if or(r.Retired, flexBool(false)) {
				continue
			}
			t := Target{Name: "router " + r.Name, Router: true, BGP: true, SSH: transport.SSHConfig{
				Host: r.Address, Port: int(or(r.SSHPort, flexInt(22))), User: or(r.User, "root"),
				HostKey: or(r.HostKey, ""), AgentSocket: or(s.SSHAgentSocket, ""), PrivateKeyFile: or(s.SSHPrivateKeyFile, ""),
				Sudo: bool(or(r.Sudo, or(s.Sudo, flexBool(false)))),
			}}
			if t.SSH.HostKey == "" {
				t.SSH.KnownHostsFile = or(s.KnownHostsFile, "")
			}
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// flexBool and flexInt decode a JSON bool or number, or a string holding
// one, as the template's type conversion of settings does.
type (
	flexBool bool
	flexInt  int
)

func (b *flexBool) UnmarshalJSON(data []byte) error {
	v, err := strconv.ParseBool(strings.Trim(string(data), `"`))
	if err != nil {
		return fmt.Errorf("%s is not a bool", data)
	}
	*b = flexBool(v)
	return nil
}

func (n *flexInt) UnmarshalJSON(data []byte) error {
	v, err := strconv.Atoi(strings.Trim(string(data), `"`))
	if err != nil {
		return fmt.Errorf("%s is not a whole number", data)
	}
	*n = flexInt(v)
	return nil
}
