// The nftables table of the layer-4 load balancers, built as nft's JSON.

package l4

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// NftTable is the nftables table (family ip) the service owns.
const NftTable = "lbhost_l4"

// ChainPrefix starts the name of each load balancer's chain (lb_<name>);
// the chain's first rule (a counter) carries its Signature as comment.
const ChainPrefix = "lb_"

// Live is a load balancer with the backends that pass their check now.
type Live struct {
	Config
	Up []Backend
}

// Signature identifies what is loaded for one load balancer: its config's
// hash (which the provider compares to the config it wrote) and its
// healthy backends' (names hashed: a comment holds 128 bytes).
func (l Live) Signature() string {
	sum := sha256.Sum256([]byte(strings.Join(names(l.Up), ",")))
	return fmt.Sprintf("cfg=%s up=%d/%d:%s", ConfigHash(l.Config), len(l.Up), len(l.Backends), hex.EncodeToString(sum[:4]))
}

// ConfigOfSignature is the config hash in a Signature.
func ConfigOfSignature(sig string) string {
	h, _, _ := strings.Cut(strings.TrimPrefix(sig, "cfg="), " ")
	return h
}

// ConfigHash is a short hash of a config's content.
func ConfigHash(c Config) string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

func names(bs []Backend) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}

// obj is one JSON object of nft's schema.
type obj = map[string]any

func match(op string, left, right any) obj {
	return obj{"match": obj{"op": op, "left": left, "right": right}}
}

func payload(proto, field string) obj {
	return obj{"payload": obj{"protocol": proto, "field": field}}
}

// portMatch matches packets to address:port over protocol.
func portMatch(address string, p Port) []any {
	return []any{
		match("==", payload("ip", "daddr"), address),
		match("==", obj{"meta": obj{"key": "l4proto"}}, strings.ToLower(p.Protocol)),
		match("==", payload("th", "dport"), p.Port),
	}
}

// Ruleset is nft's JSON input (`nft -j -f -`) that replaces table NftTable
// with the rules of lbs in one transaction; with no load balancer it only
// removes the table. The output is deterministic: equal input, equal bytes.
//
// Chains: "pre_filter" (prerouting, before NAT) drops clients outside a load
// balancer's source ranges and rejects connections to a port with no
// healthy backend (TCP reset, else ICMP port unreachable, as kube-proxy
// does); "pre_dnat" (prerouting) jumps to lb_<name> per VIP, whose rules DNAT
// each port to a healthy backend's node port (numgen random, or jhash of
// the client address for ClientIP affinity); "post_snat" (postrouting)
// rewrites the source of the connections of load balancers with SNAT to
// their VIP.
func Ruleset(lbs []Live) ([]byte, error) {
	table := obj{"family": "ip", "name": NftTable}
	cmds := []any{obj{"add": obj{"table": table}}, obj{"delete": obj{"table": table}}}
	lbs = slices.SortedFunc(slices.Values(lbs), func(a, b Live) int { return strings.Compare(a.Name, b.Name) })
	if len(lbs) > 0 {
		cmds = append(cmds, obj{"add": obj{"table": table}})
		base := func(name, typ, hook string, prio int) {
			cmds = append(cmds, obj{"add": obj{"chain": obj{"family": "ip", "table": NftTable, "name": name,
				"type": typ, "hook": hook, "prio": prio, "policy": "accept"}}})
		}
		base("pre_filter", "filter", "prerouting", -110)
		base("pre_dnat", "nat", "prerouting", -100)
		base("post_snat", "nat", "postrouting", 100)
		rule := func(chain string, expr ...any) {
			cmds = append(cmds, obj{"add": obj{"rule": obj{"family": "ip", "table": NftTable, "chain": chain, "expr": expr}}})
		}
		for _, lb := range lbs {
			chain := ChainPrefix + lb.Name
			cmds = append(cmds, obj{"add": obj{"chain": obj{"family": "ip", "table": NftTable, "name": chain}}},
				obj{"add": obj{"rule": obj{"family": "ip", "table": NftTable, "chain": chain, "comment": lb.Signature(), "expr": []any{obj{"counter": nil}}}}})
			rule("pre_dnat", match("==", payload("ip", "daddr"), lb.Address), obj{"jump": obj{"target": chain}})
			up := slices.SortedFunc(slices.Values(lb.Up), func(a, b Backend) int { return strings.Compare(a.Name, b.Name) })
			for _, p := range lb.Ports {
				if len(lb.SourceRanges) > 0 {
					ranges := make([]any, len(lb.SourceRanges))
					for i, r := range lb.SourceRanges {
						addr, bits, _ := strings.Cut(r, "/")
						n := 0
						for _, c := range bits {
							n = n*10 + int(c-'0')
						}
						ranges[i] = obj{"prefix": obj{"addr": addr, "len": n}}
					}
					rule("pre_filter", append(portMatch(lb.Address, p), match("!=", payload("ip", "saddr"), obj{"set": ranges}), obj{"drop": nil})...)
				}
				if len(up) == 0 {
					reject := obj{"type": "icmp", "expr": "port-unreachable"}
					if p.Protocol == "TCP" {
						reject = obj{"type": "tcp reset"}
					}
					rule("pre_filter", append(portMatch(lb.Address, p), obj{"reject": reject})...)
					continue
				}
				rule(chain, append(portMatch(lb.Address, p)[1:], obj{"dnat": dnat(lb.Affinity, up, p.NodePort)})...)
			}
			if lb.SNAT {
				rule("post_snat",
					match("in", obj{"ct": obj{"key": "status"}}, "dnat"),
					match("==", obj{"ct": obj{"key": "ip daddr", "dir": "original"}}, lb.Address),
					obj{"snat": obj{"family": "ip", "addr": lb.Address}})
			}
		}
	}
	return json.Marshal(obj{"nftables": cmds})
}

// dnat is the DNAT statement to one of up (sorted) at port: each new
// connection to a random one, or to the one the client address hashes to.
func dnat(affinity string, up []Backend, port int) obj {
	if len(up) == 1 {
		return obj{"family": "ip", "addr": up[0].Address, "port": port}
	}
	key := obj{"numgen": obj{"mode": "random", "mod": len(up), "offset": 0}}
	if affinity == AffinityClientIP {
		key = obj{"jhash": obj{"mod": len(up), "seed": 0, "offset": 0, "expr": payload("ip", "saddr")}}
	}
	elems := make([]any, len(up))
	for i, b := range up {
		elems[i] = []any{i, b.Address}
	}
	return obj{"family": "ip", "addr": obj{"map": obj{"key": key, "data": obj{"set": elems}}}, "port": port}
}
