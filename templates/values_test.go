package templates

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// freshNodesVal builds the nodes input without the cache.
func freshNodesVal(nodes []*corev1.Node) cty.Value {
	var sorted []*corev1.Node
	for _, n := range nodes {
		if n != nil {
			sorted = append(sorted, n)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	if len(sorted) == 0 {
		return cty.ListValEmpty(NodeType)
	}
	return buildNodesVal(sorted)
}

// TestNodesValCache changes the same Node objects in place, one field
// nodesVal reads at a time, and checks that the (cached) nodes input always
// equals a fresh build: the cache never serves a stale value.
func TestNodesValCache(t *testing.T) {
	nodes := testNodes()
	steps := []struct {
		name   string
		change func()
	}{
		{"unchanged", func() {}},
		{"name", func() { nodes[0].Name = "node-z" }},
		{"provider id", func() { nodes[1].Spec.ProviderID = "terraform://local/other" }},
		{"address", func() { nodes[1].Status.Addresses[0].Address = "10.250.0.99" }},
		{"address type", func() { nodes[1].Status.Addresses[0].Type = corev1.NodeExternalIP }},
		{"address added", func() {
			nodes[2].Status.Addresses = append(nodes[2].Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.250.0.4"})
		}},
		{"label value", func() { nodes[0].Labels[labelZone] = "zone-c" }},
		{"label added", func() { nodes[2].Labels = map[string]string{"a": "b"} }},
		{"label moved between key and value", func() { nodes[2].Labels = map[string]string{"ab": ""} }},
		{"node removed", func() { nodes = nodes[:2] }},
		{"nil node", func() { nodes = append(nodes, nil) }},
		{"back to an earlier set", func() { nodes = testNodes() }},
	}
	for _, s := range steps {
		s.change()
		for range 2 { // a miss, then a hit
			if got, want := nodesVal(nodes), freshNodesVal(nodes); !got.RawEquals(want) {
				t.Fatalf("after %s: nodesVal =\n%#v\nwant\n%#v", s.name, got, want)
			}
		}
	}
}

// TestNodesKeyUnambiguous: different node sets never share a key.
func TestNodesKeyUnambiguous(t *testing.T) {
	n := func(name, pid string, labels map[string]string, addrs ...string) *corev1.Node {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: pid}}
		for _, a := range addrs {
			node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
		}
		return node
	}
	sets := [][]*corev1.Node{
		{n("a", "", nil)},
		{n("ab", "", nil)},
		{n("a", "b", nil)},
		{n("a", "", map[string]string{"b": ""})},
		{n("a", "", map[string]string{"": "b"})},
		{n("a", "", nil, "b")},
		{n("a", "", nil), n("b", "", nil)},
		{n("a", "", map[string]string{"x": "1", "y": "2"})},
		{n("a", "", map[string]string{"x": "1y2"})},
	}
	seen := map[string]int{}
	for i, s := range sets {
		k := string(appendNodesKey(nil, s))
		if j, dup := seen[k]; dup {
			t.Errorf("sets %d and %d share a key", j, i)
		}
		seen[k] = i
	}
}

func TestValueCacheBound(t *testing.T) {
	c := &valueCache{max: 2}
	a, b, d := cty.StringVal("a"), cty.StringVal("b"), cty.StringVal("d")
	c.put([]byte("a"), a)
	c.put([]byte("b"), b)
	if v, ok := c.get([]byte("a")); !ok || !v.RawEquals(a) { // a is now the most recent
		t.Fatalf("get a = %#v, %v", v, ok)
	}
	c.put([]byte("d"), d) // evicts b, the least recently used
	if _, ok := c.get([]byte("b")); ok {
		t.Error("b survived eviction")
	}
	for k, want := range map[string]cty.Value{"a": a, "d": d} {
		if v, ok := c.get([]byte(k)); !ok || !v.RawEquals(want) {
			t.Errorf("get %s = %#v, %v", k, v, ok)
		}
	}
	if len(c.entries) != 2 {
		t.Errorf("%d entries, want at most 2", len(c.entries))
	}
}

// TestNodesValConcurrent renders node sets from many goroutines (run with
// -race): every result is right whoever filled the cache.
func TestNodesValConcurrent(t *testing.T) {
	sets := make([][]*corev1.Node, 3)
	for i := range sets {
		for j := range 20 {
			sets[i] = append(sets[i], node(fmt.Sprintf("node-%02d", j), fmt.Sprintf("10.250.%d.%d", i, j+1), "zone-a"))
		}
	}
	want := make([]cty.Value, len(sets))
	for i, s := range sets {
		want[i] = freshNodesVal(s)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*30)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				k := (g + i) % len(sets)
				if !nodesVal(sets[k]).RawEquals(want[k]) {
					errs <- fmt.Sprintf("goroutine %d: set %d wrong", g, k)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// BenchmarkRenderLoadBalancer500NodesChurn renders over a node set that
// changes on every render (one node's label), so the nodes cache never
// hits: the cost of the first Service rendered after a node change.
func BenchmarkRenderLoadBalancer500NodesChurn(b *testing.B) {
	set := fullSet(b)
	cfg := testConfig(b, baseConfig)
	nodes := benchNodes()
	s := svc(nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		nodes[i%len(nodes)].Labels["churn"] = fmt.Sprint(i)
		if _, err := set.RenderLoadBalancer(cfg, s, nodes, Addresses{}); err != nil {
			b.Fatal(err)
		}
	}
}
