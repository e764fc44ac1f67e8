package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Chart is the Helm chart's directory relative to the repository root.
const Chart = "deploy/helm/tfccm"

// HelmTemplate renders the chart in repository root with the helm binary
// as release name in namespace, with the given values files and --set
// arguments ("key=value").
func HelmTemplate(helm, root, name, namespace string, valuesFiles []string, set ...string) ([]byte, error) {
	args := []string{"template", name, filepath.Join(root, Chart), "--namespace", namespace}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helm, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+os.TempDir()+"/tfccm-helm-cache", "HELM_CONFIG_HOME="+os.TempDir()+"/tfccm-helm-config", "HELM_DATA_HOME="+os.TempDir()+"/tfccm-helm-data")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %v: %s", err, stderr.Bytes())
	}
	return out, nil
}

var (
	docSep = regexp.MustCompile(`(?m)^---\s*$`)
	strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
)

// Decode decodes a stream of YAML documents strictly: built-in kinds into
// their typed objects, others (a ServiceMonitor) as unstructured.
func Decode(b []byte) ([]runtime.Object, error) {
	var objs []runtime.Object
	for i, doc := range docSep.Split(string(b), -1) {
		j, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if string(j) == "null" {
			continue
		}
		obj, _, err := strict.Decode(j, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(j); err != nil {
				return nil, fmt.Errorf("document %d: %w", i, err)
			}
			obj, err = u, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}
