package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Objects decodes, strictly, every manifest listed in dir's
// kustomization.yaml, and fails on a YAML file in dir that is not listed.
func Objects(dir string) ([]runtime.Object, error) {
	var k struct {
		Resources []string `json:"resources"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("kustomization.yaml: %w", err)
	}
	listed := map[string]bool{}
	var objs []runtime.Object
	for _, r := range k.Resources {
		listed[r] = true
		b, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			return nil, err
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			j, err := yaml.YAMLToJSONStrict(doc)
			if err != nil {
				return nil, fmt.Errorf("%s document %d: %w", r, i, err)
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(j, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s document %d: %w", r, i, err)
			}
			objs = append(objs, obj)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" && !listed[name] {
			return nil, fmt.Errorf("%s is not listed in kustomization.yaml", f)
		}
	}
	return objs, nil
}
