package l4

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Loaded is what `nft -j list table ip lbhost_l4` shows: each load
// balancer's Signature by name, and the number of rules in the table.
type Loaded struct {
	Signatures map[string]string
	Rules      int
}

// ListArgs lists the table as JSON.
func ListArgs() []string { return []string{"nft", "-j", "list", "table", "ip", NftTable} }

// ParseLoaded reads ListArgs' output.
func ParseLoaded(b []byte) (Loaded, error) {
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Chain   string `json:"chain"`
				Comment string `json:"comment"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Loaded{}, fmt.Errorf("parse nft -j list table: %w", err)
	}
	l := Loaded{Signatures: map[string]string{}}
	for _, o := range doc.Nftables {
		if o.Rule == nil {
			continue
		}
		l.Rules++
		if name, ok := strings.CutPrefix(o.Rule.Chain, ChainPrefix); ok && strings.HasPrefix(o.Rule.Comment, "cfg=") {
			l.Signatures[name] = o.Rule.Comment
		}
	}
	return l, nil
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
