package holder

import (
	"fmt"
	"slices"
	"testing"
)

func TestCandidates(t *testing.T) {
	ok := Node{Ready: true, AgentAlive: true, AgentEligible: true, LocalEndpoint: true}
	with := func(f func(*Node)) Node { n := ok; f(&n); return n }
	nodes := map[string]Node{
		"a":          ok,
		"b":          ok,
		"notready":   with(func(n *Node) { n.Ready = false }),
		"cordoned":   with(func(n *Node) { n.Unschedulable = true }),
		"noagent":    with(func(n *Node) { n.AgentAlive = false }),
		"cannot":     with(func(n *Node) { n.AgentEligible = false }),
		"noendpoint": with(func(n *Node) { n.LocalEndpoint = false }),
	}
	all := []string{"b", "a", "notready", "cordoned", "noagent", "cannot", "noendpoint", "unknown"}
	for _, tc := range []struct {
		name   string
		listed []string
		local  bool
		want   []string
	}{
		{"cluster policy: every healthy node with a live agent", all, false, []string{"a", "b", "noendpoint"}},
		{"local policy: only nodes with a ready endpoint", all, true, []string{"a", "b"}},
		{"only the listed nodes", []string{"b", "cordoned"}, false, []string{"b"}},
		{"none listed", nil, false, nil},
		{"duplicates once", []string{"a", "a"}, false, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Candidates(tc.listed, nodes, tc.local); !slices.Equal(got, tc.want) {
				t.Errorf("Candidates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		n     Node
		known bool
		local bool
		want  string
	}{
		{Node{}, false, false, NotListed},
		{Node{}, true, false, NotReady},
		{Node{Ready: true, Unschedulable: true}, true, false, NotSchedulable},
		{Node{Ready: true}, true, false, NoAgent},
		{Node{Ready: true, AgentAlive: true}, true, false, AgentIneligible},
		{Node{Ready: true, AgentAlive: true, AgentEligible: true}, true, true, NoLocalEndpoint},
		{Node{Ready: true, AgentAlive: true, AgentEligible: true}, true, false, ""},
	} {
		if got := Reason(tc.n, tc.known, tc.local); got != tc.want {
			t.Errorf("Reason(%+v, known %v, local %v) = %q, want %q", tc.n, tc.known, tc.local, got, tc.want)
		}
	}
}

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		name       string
		candidates []string
	}{
		{"none", nil},
		{"one", []string{"a"}},
		{"three", []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Choose("10.0.0.1", tc.candidates)
			if len(tc.candidates) == 0 {
				if got != "" {
					t.Fatalf("Choose = %q with no candidate", got)
				}
				return
			}
			if !slices.Contains(tc.candidates, got) {
				t.Fatalf("Choose = %q, not a candidate of %v", got, tc.candidates)
			}
			// The order the agents list candidates in does not matter.
			rev := slices.Clone(tc.candidates)
			slices.Reverse(rev)
			if again := Choose("10.0.0.1", rev); again != got {
				t.Errorf("Choose depends on order: %q then %q", got, again)
			}
		})
	}
}

// TestChooseMovesOnlyTheLostNodesVIPs: a node leaving moves the VIPs it
// held and no other; VIPs spread over the nodes.
func TestChooseMovesOnlyTheLostNodesVIPs(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	count := map[string]int{}
	for i := range 400 {
		addr := fmt.Sprintf("10.0.%d.%d", i/250, i%250)
		before := Choose(addr, nodes)
		count[before]++
		after := Choose(addr, []string{"n1", "n3", "n4"})
		if before != "n2" && after != before {
			t.Fatalf("%s moved from %s to %s when n2 left", addr, before, after)
		}
		if after == "n2" {
			t.Fatalf("%s chose the node that left", addr)
		}
	}
	for _, n := range nodes {
		if count[n] < 60 {
			t.Errorf("node %s holds %d of 400 VIPs: %v", n, count[n], count)
		}
	}
}

// TestSticky: the current holder keeps the VIP while it is a candidate; a
// returning node takes nothing back; with no current candidate the hash
// decides.
func TestSticky(t *testing.T) {
	const addr = "10.0.0.1"
	all := []string{"a", "b", "c"}
	first := Choose(addr, all)
	var others []string
	for _, n := range all {
		if n != first {
			others = append(others, n)
		}
	}
	second := Choose(addr, others)
	for _, tc := range []struct {
		name       string
		candidates []string
		current    []string
		want       string
	}{
		{"no holder yet: the hash", all, nil, first},
		{"the holder stays while eligible", all, []string{first}, first},
		{"failback: the first choice returns, the holder keeps it", all, []string{second}, second},
		{"the holder is out: the hash among the rest", others, []string{first}, second},
		{"a holder not selected any more is ignored", []string{"a", "b"}, []string{"z"}, Choose(addr, []string{"a", "b"})},
		{"two current holders (statuses disagree): the hash among them", all, []string{others[0], others[1]}, Choose(addr, others)},
		{"two current holders, one out: the other", []string{first, others[0]}, []string{others[0], others[1]}, others[0]},
		{"no candidate", nil, []string{first}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Sticky(addr, tc.candidates, tc.current); got != tc.want {
				t.Errorf("Sticky(%v, current %v) = %q, want %q", tc.candidates, tc.current, got, tc.want)
			}
		})
	}
}
