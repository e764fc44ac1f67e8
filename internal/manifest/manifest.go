// Package manifest reads the Kubernetes objects tfccm's tools take from
// files. It reads YAML or JSON, one or more documents: a Service
// (ReadService), Nodes (ReadNodes) and a cluster dump of both
// (ReadCluster), decoded strictly so a misspelt field is an error. `tfccm render`, `tfccm plan`
// and the demo (hack/demo) read theirs with it.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readDocs splits a YAML (or JSON) file into its documents.
func readDocs(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(d)) == 0 || isComment(d) {
			continue
		}
		docs = append(docs, d)
	}
}

func isComment(d []byte) bool {
	for _, line := range bytes.Split(d, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ReadService reads one v1 Service.
func ReadService(path string) (*corev1.Service, error) {
	docs, err := readDocs(path)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s: want exactly one Service, found %d documents", path, len(docs))
	}
	var tm typeMeta
	if err := yaml.Unmarshal(docs[0], &tm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if tm.Kind != "Service" || tm.APIVersion != "v1" {
		return nil, fmt.Errorf("%s: want a v1 Service, found %s %s", path, tm.APIVersion, tm.Kind)
	}
	var svc corev1.Service
	if err := yaml.UnmarshalStrict(docs[0], &svc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &svc, nil
}

// ReadNodes reads v1 Nodes: a NodeList (or List), or one Node per document;
// every Node needs a name, and no name may appear twice.
func ReadNodes(path string) ([]*corev1.Node, error) {
	docs, err := readDocs(path)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Node
	for i, d := range docs {
		var tm typeMeta
		if err := yaml.Unmarshal(d, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		switch {
		case tm.APIVersion == "v1" && (tm.Kind == "NodeList" || tm.Kind == "List"):
			var l corev1.NodeList
			if err := yaml.UnmarshalStrict(d, &l); err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
			}
			for j := range l.Items {
				out = append(out, &l.Items[j])
			}
		case tm.APIVersion == "v1" && tm.Kind == "Node":
			var n corev1.Node
			if err := yaml.UnmarshalStrict(d, &n); err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
			}
			out = append(out, &n)
		default:
			return nil, fmt.Errorf("%s: document %d: want a v1 Node or NodeList, found %s %s", path, i+1, tm.APIVersion, tm.Kind)
		}
	}
	seen := map[string]bool{}
	for _, n := range out {
		if n.Name == "" {
			return nil, fmt.Errorf("%s: a Node has no metadata.name", path)
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("%s: Node %q appears twice", path, n.Name)
		}
		seen[n.Name] = true
	}
	return out, nil
}

// ReadCluster reads the Services and Nodes of a cluster dump, e.g.
// `kubectl get services,nodes -A -o yaml`: a List (or ServiceList,
// NodeList) or single objects, one per document. Any other kind is an
// error.
func ReadCluster(path string) ([]*corev1.Service, []*corev1.Node, error) {
	docs, err := readDocs(path)
	if err != nil {
		return nil, nil, err
	}
	var svcs []*corev1.Service
	var nodes []*corev1.Node
	for i, d := range docs {
		var list struct {
			typeMeta
			Items []json.RawMessage `json:"items"`
		}
		if err := yaml.Unmarshal(d, &list); err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		items := [][]byte{d}
		if list.APIVersion == "v1" && strings.HasSuffix(list.Kind, "List") {
			items = items[:0]
			for _, it := range list.Items {
				items = append(items, it)
			}
		}
		for j, it := range items {
			var tm typeMeta
			if err := yaml.Unmarshal(it, &tm); err != nil {
				return nil, nil, fmt.Errorf("%s: document %d, item %d: %w", path, i+1, j+1, err)
			}
			switch {
			case tm.APIVersion == "v1" && tm.Kind == "Service":
				var s corev1.Service
				if err := yaml.UnmarshalStrict(it, &s); err != nil {
					return nil, nil, fmt.Errorf("%s: document %d, item %d: %w", path, i+1, j+1, err)
				}
				svcs = append(svcs, &s)
			case tm.APIVersion == "v1" && tm.Kind == "Node":
				var n corev1.Node
				if err := yaml.UnmarshalStrict(it, &n); err != nil {
					return nil, nil, fmt.Errorf("%s: document %d, item %d: %w", path, i+1, j+1, err)
				}
				nodes = append(nodes, &n)
			default:
				return nil, nil, fmt.Errorf("%s: document %d, item %d: want a v1 Service or Node, found %s %s", path, i+1, j+1, tm.APIVersion, tm.Kind)
			}
		}
	}
	return svcs, nodes, nil
}
