// What the kernel has loaded of the nftables table, compared with what a
// config expects.

package l4

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Loaded is what `nft -j list table ip lbhost_l4` shows: each load
// balancer's Signature by name, the number of rules in the table, and
// each load balancer's DNAT targets: the addresses of the backends it
// forwards new connections to (its healthy ones).
type Loaded struct {
	Signatures map[string]string
	Rules      int
	Targets    map[string][]string
}

// ListArgs lists the table as JSON.
func ListArgs() []string { return []string{"nft", "-j", "list", "table", "ip", NftTable} }

// ParseLoaded reads ListArgs' output.
func ParseLoaded(b []byte) (Loaded, error) {
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Chain   string                       `json:"chain"`
				Comment string                       `json:"comment"`
				Expr    []map[string]json.RawMessage `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Loaded{}, fmt.Errorf("parse nft -j list table: %w", err)
	}
	l := Loaded{Signatures: map[string]string{}, Targets: map[string][]string{}}
	for _, o := range doc.Nftables {
		if o.Rule == nil {
			continue
		}
		l.Rules++
		name, ok := strings.CutPrefix(o.Rule.Chain, ChainPrefix)
		if !ok {
			continue
		}
		if strings.HasPrefix(o.Rule.Comment, "cfg=") {
			l.Signatures[name] = o.Rule.Comment
		}
		for _, e := range o.Rule.Expr {
			if d, ok := e["dnat"]; ok {
				addrs, err := dnatTargets(d)
				if err != nil {
					return Loaded{}, fmt.Errorf("parse nft -j list table: chain %s: %w", o.Rule.Chain, err)
				}
				for _, a := range addrs {
					if !slices.Contains(l.Targets[name], a) {
						l.Targets[name] = append(l.Targets[name], a)
					}
				}
			}
		}
	}
	return l, nil
}

// dnatTargets is the addresses of a dnat statement as Ruleset writes it:
// one address, or an anonymous map from numgen/jhash to addresses.
func dnatTargets(raw json.RawMessage) ([]string, error) {
	var d struct {
		Addr json.RawMessage `json:"addr"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	var one string
	if json.Unmarshal(d.Addr, &one) == nil {
		return []string{one}, nil
	}
	var m struct {
		Map struct {
			Data struct {
				Set [][2]any `json:"set"`
			} `json:"data"`
		} `json:"map"`
	}
	if err := json.Unmarshal(d.Addr, &m); err != nil {
		return nil, fmt.Errorf("dnat address %s: %w", d.Addr, err)
	}
	var out []string
	for _, e := range m.Map.Data.Set {
		a, ok := e[1].(string)
		if !ok {
			return nil, fmt.Errorf("dnat map element %v has no address", e)
		}
		out = append(out, a)
	}
	return out, nil
}

// Expect is the Loaded that Ruleset(lbs) produces.
func Expect(lbs []Live, ruleset []byte) Loaded {
	var doc struct {
		Nftables []struct {
			Add *struct {
				Rule *json.RawMessage `json:"rule"`
			} `json:"add"`
		} `json:"nftables"`
	}
	_ = json.Unmarshal(ruleset, &doc)
	l := Loaded{Signatures: map[string]string{}}
	for _, o := range doc.Nftables {
		if o.Add != nil && o.Add.Rule != nil {
			l.Rules++
		}
	}
	for _, lb := range lbs {
		l.Signatures[lb.Name] = lb.Signature()
	}
	return l
}

// Equal reports whether two listings show the same load balancers.
func (l Loaded) Equal(o Loaded) bool {
	if l.Rules != o.Rules || len(l.Signatures) != len(o.Signatures) {
		return false
	}
	for k, v := range l.Signatures {
		if o.Signatures[k] != v {
			return false
		}
	}
	return true
}
