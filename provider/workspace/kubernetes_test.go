package workspace

import (
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

func kubernetesBackendFile(suffix, kubeconfig string) []byte {
	f := hclwrite.NewEmptyFile()
	b := f.Body().AppendNewBlock("terraform", nil).Body().AppendNewBlock("backend", []string{"kubernetes"}).Body()
	for _, kv := range kubernetesAttrs(suffix, kubeconfig) {
		b.SetAttributeValue(kv.k, kv.v)
	}
	return f.Bytes()
}

type attr struct {
	k string
	v cty.Value
}

func kubernetesAttrs(suffix, kubeconfig string) []attr {
	return []attr{{"secret_suffix", cty.StringVal(suffix)}, {"config_path", cty.StringVal(kubeconfig)}, {"namespace", cty.StringVal("default")}}
}

func kubernetesBackendInfo(suffix, kubeconfig string) BackendInfo {
	b := BackendInfo{Type: "kubernetes", Attributes: map[string]cty.Value{}}
	for _, kv := range kubernetesAttrs(suffix, kubeconfig) {
		b.Attributes[kv.k] = kv.v
	}
	return b
}
