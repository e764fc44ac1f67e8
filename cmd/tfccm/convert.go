// tfccm convert metallb: MetalLB's IPAddressPools (with the
// L2Advertisements that announce them) as tfccm AddressPool manifests,
// from a cluster or a YAML dump; what does not carry over is named.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/ipam/metallb"
)

func runConvert(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "metallb" {
		fmt.Fprintln(stderr, "usage: tfccm convert metallb [-f FILE|-] [--kubeconfig FILE] [--context NAME]")
		return exitUsage
	}
	fs := flag.NewFlagSet("tfccm convert metallb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "a YAML dump of MetalLB's objects (kubectl get ipaddresspools,l2advertisements,bgpadvertisements -A -o yaml), - for stdin; default: read them from the cluster")
	var kube kubeFlags
	kube.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tfccm convert metallb [-f FILE|-] [--kubeconfig FILE] [--context NAME]\n\n"+
			"Writes one tfccm AddressPool per MetalLB IPAddressPool (metallb.io/v1beta1) to stdout, with the interface and node\n"+
			"selector of the L2Advertisements that announce it; what has no AddressPool equivalent is named in a comment above\n"+
			"the pool and on stderr. Apply the output with kubectl apply -f.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage
	}
	var items []unstructured.Unstructured
	var err error
	switch *file {
	case "":
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		items, err = clusterMetalLB(ctx, kube)
	case "-":
		items, err = readObjects(os.Stdin, "stdin")
	default:
		var b []byte
		if b, err = os.ReadFile(*file); err == nil {
			items, err = readObjects(bytes.NewReader(b), *file)
		}
	}
	if err == nil {
		err = convertMetalLB(items, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tfccm convert metallb: %v\n", err)
		return exitError
	}
	return exitOK
}

// convertMetalLB writes the AddressPools of MetalLB's objects among items,
// each after comments naming what of it did not carry over (also on
// stderr).
func convertMetalLB(items []unstructured.Unstructured, stdout, stderr io.Writer) error {
	objs, err := metallb.Decode(items)
	if err != nil {
		return err
	}
	if len(objs.Pools) == 0 {
		return fmt.Errorf("no MetalLB IPAddressPool (metallb.io/v1beta1) found")
	}
	pools, notes := metallb.Convert(objs)
	byPool := map[string][]string{}
	var unplaced []string
	for _, n := range notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
		placed := false
		for _, p := range pools {
			if n.Object == "IPAddressPool "+p.Annotations[metallb.SourceAnnotation] {
				byPool[p.Name] = append(byPool[p.Name], n.Message)
				placed = true
			}
		}
		if !placed {
			unplaced = append(unplaced, n.String())
		}
	}
	var out bytes.Buffer
	out.WriteString("# tfccm AddressPools converted from MetalLB's IPAddressPools by `tfccm convert metallb`.\n" +
		"# network.interface and network.nodeSelector are the L2Advertisements': the nodes' interface; where LB hosts\n" +
		"# hold the VIPs (the baremetal set) network.interface is the LB hosts' (docs/address-pools.md#segments).\n")
	for _, n := range unplaced {
		out.WriteString(comment("Note: " + n))
	}
	for _, p := range pools {
		out.WriteString("---\n")
		for _, n := range byPool[p.Name] {
			out.WriteString(comment("Note: " + n))
		}
		spec, err := json.Marshal(metallb.Clean(p).Spec)
		if err != nil {
			return err
		}
		var specMap map[string]any
		if err := json.Unmarshal(spec, &specMap); err != nil {
			return err
		}
		y, err := yaml.Marshal(map[string]any{
			"apiVersion": p.APIVersion,
			"kind":       p.Kind,
			"metadata":   map[string]any{"name": p.Name, "annotations": p.Annotations},
			"spec":       specMap,
		})
		if err != nil {
			return err
		}
		out.Write(y)
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

// comment is s as YAML comment lines.
func comment(s string) string {
	return "# " + strings.ReplaceAll(s, "\n", "\n# ") + "\n"
}

// clusterMetalLB lists MetalLB's pools and announcements in every
// namespace (a kind whose CRD the cluster lacks is skipped).
func clusterMetalLB(ctx context.Context, k kubeFlags) ([]unstructured.Unstructured, error) {
	client, err := k.dynamicClient()
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, g := range []struct {
		kind string
		r    schema.GroupVersionResource
	}{{"IPAddressPool", metallb.PoolsGVR}, {"L2Advertisement", metallb.L2GVR}, {"BGPAdvertisement", metallb.BGPGVR}} {
		l, err := client.Resource(g.r).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", g.r.GroupResource(), err)
		}
		for _, u := range l.Items {
			u.SetAPIVersion(metallb.Group + "/" + metallb.Version)
			u.SetKind(g.kind)
			out = append(out, u)
		}
	}
	return out, nil
}
