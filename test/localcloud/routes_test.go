package localcloud

import (
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func routeVars(routes map[string]any) map[string]any {
	return map[string]any{"cluster_name": cluster, "routes": routes, "settings": shared.RoutesSettings()}
}

func route(cidr, node string, blackhole bool) map[string]any {
	n := shared.Node(node)
	addrs := []map[string]string{}
	if n.Address != "" {
		addrs = append(addrs, map[string]string{"type": "InternalIP", "address": n.Address})
	}
	if n.AddressV6 != "" {
		addrs = append(addrs, map[string]string{"type": "InternalIP", "address": n.AddressV6})
	}
	return map[string]any{"destination_cidr": cidr, "target_node": node, "target_node_addresses": addrs, "blackhole": blackhole}
}

func cloudRoutes(t *testing.T, family string) string {
	t.Helper()
	out, err := exec.Command("ip", family, "-n", shared.CloudNetns, "route").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route: %v %s", err, out)
	}
	return string(out)
}

// fromCloud GETs url from inside the cloud netns (where routes live).
func fromCloud(url string) (string, error) {
	resp, err := HTTPClient(shared.CloudNetns, 2*time.Second).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestRoutes(t *testing.T) {
	c := shared
	// A "pod" address inside node-a's podCIDRs, and node-a serving on it.
	a := c.Node("node-a")
	for _, args := range [][]string{
		{"ip", "-n", a.Netns, "addr", "add", "10.244.1.10/32", "dev", "lo"},
		{"ip", "-n", a.Netns, "addr", "add", "fd00:10:244:1::10/128", "dev", "lo"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", args, err, out)
		}
		del := append([]string{}, args...)
		del[4] = "del"
		t.Cleanup(func() { _ = exec.Command(del[0], del[1:]...).Run() })
	}
	stop, err := c.ServeHTTP("node-a", 8080, "pod on node-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	const podURL, podURL6 = "http://10.244.1.10:8080/", "http://[fd00:10:244:1::10]:8080/"
	if _, err := fromCloud(podURL); err == nil {
		t.Fatal("pod address reachable before any route exists")
	}

	w := newWorkspace(t, "routes")
	w.destroyOnCleanup()
	all := map[string]any{
		"node-a-10.244.1.0-24":       route("10.244.1.0/24", "node-a", false),
		"node-a-fd00-10-244-1-64":    route("fd00:10:244:1::/64", "node-a", false),
		"node-b-10.244.2.0-24":       route("10.244.2.0/24", "node-b", false),
		"deleted-node-10.244.9.0-24": map[string]any{"destination_cidr": "10.244.9.0/24", "target_node": "gone", "target_node_addresses": []any{}, "blackhole": true},
	}
	w.mustApply(routeVars(all))

	v4, v6 := cloudRoutes(t, "-4"), cloudRoutes(t, "-6")
	for _, want := range []string{"10.244.1.0/24 via 10.250.0.11 ", "10.244.2.0/24 via 10.250.0.12 ", "blackhole 10.244.9.0/24"} {
		if !strings.Contains(v4, want) {
			t.Errorf("cloud routes lack %q:\n%s", want, v4)
		}
	}
	if !strings.Contains(v6, "fd00:10:244:1::/64 via fd00:250::11 ") {
		t.Errorf("cloud IPv6 routes lack the node-a route:\n%s", v6)
	}
	for _, u := range []string{podURL, podURL6} {
		if body, err := fromCloud(u); err != nil || body != "pod on node-a" {
			t.Errorf("GET %s from the cloud = %q, %v", u, body, err)
		}
	}
	var out map[string]struct {
		DestinationCIDR string `json:"destination_cidr"`
		TargetNode      string `json:"target_node"`
		Blackhole       bool   `json:"blackhole"`
	}
	w.output("routes", &out)
	if len(out) != 4 || out["node-a-fd00-10-244-1-64"].DestinationCIDR != "fd00:10:244:1::/64" ||
		out["node-a-fd00-10-244-1-64"].TargetNode != "node-a" || !out["deleted-node-10.244.9.0-24"].Blackhole {
		t.Errorf("routes output = %+v", out)
	}

	// An IPv6 route to a node without an IPv6 address is refused at plan.
	bad := map[string]any{"node-b-fd00-10-244-2-64": route("fd00:10:244:2::/64", "node-b", false)}
	for k, v := range all {
		bad[k] = v
	}
	if err := w.apply(routeVars(bad)); !errContains(err, "node node-b has no InternalIP of the IPv6 family") {
		t.Fatalf("IPv6 route to an IPv4-only node = %v", err)
	}

	// Deleting one route leaves the others alone.
	delete(all, "node-a-10.244.1.0-24")
	w.mustApply(routeVars(all))
	if v4 := cloudRoutes(t, "-4"); strings.Contains(v4, "10.244.1.0/24") || !strings.Contains(v4, "10.244.2.0/24 via 10.250.0.12 ") {
		t.Errorf("after deleting one route:\n%s", v4)
	}
	if _, err := fromCloud(podURL); err == nil {
		t.Error("pod still reachable over a deleted route")
	}
	if body, err := fromCloud(podURL6); err != nil || body != "pod on node-a" {
		t.Errorf("IPv6 route broken by deleting the IPv4 one: %q %v", body, err)
	}

	// Retargeting a route replaces it in place.
	all["node-b-10.244.2.0-24"] = route("10.244.2.0/24", "node-c", false)
	w.mustApply(routeVars(all))
	if v4 := cloudRoutes(t, "-4"); !strings.Contains(v4, "10.244.2.0/24 via 10.250.0.13 ") || strings.Contains(v4, "via 10.250.0.12") {
		t.Errorf("after retargeting:\n%s", v4)
	}

	if err := w.destroy(); err != nil {
		t.Fatal(err)
	}
	if v4, v6 := cloudRoutes(t, "-4"), cloudRoutes(t, "-6"); strings.Contains(v4, "10.244.") || strings.Contains(v6, "fd00:10:244") {
		t.Errorf("routes left after destroy:\n%s%s", v4, v6)
	}
}
