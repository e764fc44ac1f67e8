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
	"k8s.io/client-go/dynamic"

	"github.com/tfccm/tfccm/ipam/poolapi"
)

// readPoolDump reads the AddressPools of a YAML dump (kubectl get
// addresspools -o yaml, or a dump of several kinds: other kinds are
// skipped; a List's items are read).
func readPoolDump(path string) ([]*poolapi.AddressPool, error) {
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
	return out, nil
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
// has no AddressPool CRD).
func clusterPools(ctx context.Context, k kubeFlags) ([]*poolapi.AddressPool, error) {
	rc, err := k.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	l, err := client.Resource(poolapi.GVR).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list AddressPools: %w", err)
	}
	out := make([]*poolapi.AddressPool, 0, len(l.Items))
	for i := range l.Items {
		p, err := poolapi.FromUnstructured(&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
