// The AddressPool objects `tfccm render` and `tfccm plan` read (from a
// dump or the cluster), merged into the cloud config as the controller's
// book merges them.

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tfccm/tfccm/ipam/metallb"
	"github.com/tfccm/tfccm/ipam/poolapi"
)

// readPoolDump reads the AddressPools of a YAML dump (kubectl get
// addresspools -o yaml, or a dump of several kinds: other kinds are
// skipped; a List's items are read), and with withMetalLB (compat {
// metallb = true }) MetalLB's pools in it, as the controller reads them.
func readPoolDump(path string, withMetalLB bool) ([]*poolapi.AddressPool, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read AddressPools: %w", err)
	}
	items, err := readObjects(bytes.NewReader(b), path)
	if err != nil {
		return nil, err
	}
	var out []*poolapi.AddressPool
	for i := range items {
		if items[i].GetKind() != poolapi.Kind || items[i].GroupVersionKind().Group != poolapi.Group {
			continue
		}
		p, err := poolapi.FromUnstructured(&items[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, p)
	}
	if !withMetalLB {
		return out, nil
	}
	mlb, err := metallbPools(items)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return append(out, mlb...), nil
}

// metallbPools are MetalLB's pools among items, converted as the
// controller converts them (package ipam/metallb).
func metallbPools(items []unstructured.Unstructured) ([]*poolapi.AddressPool, error) {
	objs, err := metallb.Decode(items)
	if err != nil {
		return nil, err
	}
	pools, _ := metallb.Convert(objs)
	return pools, nil
}

// readObjects is every object of a YAML or JSON stream (a List's items
// one by one); name says where it came from in errors.
func readObjects(r io.Reader, name string) ([]unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []unstructured.Unstructured
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: not YAML objects: %w", name, err)
		}
		if u.Object == nil {
			continue // an empty document
		}
		if !u.IsList() {
			out = append(out, u)
			continue
		}
		l, err := u.ToList()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, l.Items...)
	}
}

// clusterPools lists the cluster's AddressPools (none when the cluster
// has no AddressPool CRD), and with withMetalLB MetalLB's pools.
func clusterPools(ctx context.Context, k kubeFlags, withMetalLB bool) ([]*poolapi.AddressPool, error) {
	client, err := k.dynamicClient()
	if err != nil {
		return nil, err
	}
	var out []*poolapi.AddressPool
	l, err := client.Resource(poolapi.GVR).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("list AddressPools: %w", err)
	default:
		for i := range l.Items {
			p, err := poolapi.FromUnstructured(&l.Items[i])
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	if !withMetalLB {
		return out, nil
	}
	items, err := clusterMetalLB(ctx, k)
	if err != nil {
		return nil, err
	}
	mlb, err := metallbPools(items)
	return append(out, mlb...), err
}
