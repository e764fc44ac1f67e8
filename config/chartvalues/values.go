package chartvalues

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// The chart's values that shape its cloud config, with the chart's
// defaults (deploy/helm/tfccm/values.yaml); the other values (the pods,
// RBAC, monitoring) do not reach the cloud config and are not read.

// values are the chart values Load reads.
type values struct {
	Image        image        `json:"image"`
	CloudConfig  cloudConfig  `json:"cloudConfig"`
	Templates    templates    `json:"templates"`
	StateBackend stateBackend `json:"stateBackend"`
	Runner       runner       `json:"runner"`
	Review       struct {
		Enabled bool `json:"enabled"`
	} `json:"review"`
	Credentials struct {
		Keys []string `json:"keys"`
	} `json:"credentials"`
	SSHKey    sshKey          `json:"sshKey"`
	Baremetal json.RawMessage `json:"baremetal"`
}

type image struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Digest     string `json:"digest"`
}

type cloudConfig struct {
	ClusterName       string `json:"clusterName"`
	TemplateSet       string `json:"templateSet"`
	LoadBalancerClass string `json:"loadBalancerClass"`
	ServeClassless    *bool  `json:"serveClassless"`
	Terraform         string `json:"terraform"`
	Inline            string `json:"inline"`
	ExistingConfigMap string `json:"existingConfigMap"`
}

type templates struct {
	Files             map[string]string `json:"files"`
	ExistingConfigMap string            `json:"existingConfigMap"`
}

type stateBackend struct {
	Type       string `json:"type"`
	Kubernetes struct {
		Namespace string `json:"namespace"`
	} `json:"kubernetes"`
}

type runner struct {
	Enabled        bool              `json:"enabled"`
	Namespace      string            `json:"namespace"`
	ServiceAccount string            `json:"serviceAccount"`
	HostNetwork    bool              `json:"hostNetwork"`
	NodeSelector   map[string]string `json:"nodeSelector"`
	Tolerations    []string          `json:"tolerations"`
	CPU            string            `json:"cpu"`
	Memory         string            `json:"memory"`
	MemoryLimit    string            `json:"memoryLimit"`
	Pool           int               `json:"pool"`
}

type sshKey struct {
	ExistingSecret string `json:"existingSecret"`
	Key            string `json:"key"`
}

// defaults are values.yaml's for the values read here.
func defaults() values {
	t := true
	v := values{
		Image:        image{Repository: "ghcr.io/tfccm/tfccm"},
		CloudConfig:  cloudConfig{ServeClassless: &t},
		StateBackend: stateBackend{Type: "kubernetes"},
		Runner:       runner{ServiceAccount: "tfccm-runner", CPU: "250m", Memory: "256Mi", MemoryLimit: "1Gi"},
		SSHKey:       sshKey{Key: "id_ed25519"},
	}
	return v
}

// parse reads a values file over the chart's defaults, as helm merges it.
func parse(valuesYAML []byte) (*values, error) {
	j, err := yaml.YAMLToJSON(valuesYAML)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	v := defaults()
	if string(j) == "null" {
		return &v, nil
	}
	if err := checkSchema(j); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	return &v, nil
}

// hasBaremetal reports whether the values set the typed baremetal hosts,
// which make the chart write baremetal.json.
func (v *values) hasBaremetal() bool {
	var b struct {
		Hosts []json.RawMessage `json:"hosts"`
	}
	return len(v.Baremetal) > 0 && json.Unmarshal(v.Baremetal, &b) == nil && len(b.Hosts) > 0
}
