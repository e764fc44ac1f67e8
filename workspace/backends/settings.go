package backends

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Secret backend settings never reach the disk where tofu can record them:
// `tofu init -backend-config=FILE` copies every value into
// .terraform/terraform.tfstate. Each backend reads its credentials from
// environment variables as well; tfccm passes the secret settings it knows
// that way, to every tofu process of the workspace, and only settings with
// no such variable go through a -backend-config file (documented).

// backendSecretEnv maps backend type → setting → the environment variable
// the backend reads it from (OpenTofu's backend documentation).
var backendSecretEnv = map[string]map[string]string{
	"http": {
		"username": "TF_HTTP_USERNAME",
		"password": "TF_HTTP_PASSWORD",
	},
	"s3": {
		"access_key":       "AWS_ACCESS_KEY_ID",
		"secret_key":       "AWS_SECRET_ACCESS_KEY",
		"token":            "AWS_SESSION_TOKEN",
		"sse_customer_key": "AWS_SSE_CUSTOMER_KEY",
	},
	"pg": {
		"conn_str": "PG_CONN_STR",
	},
	"kubernetes": {
		"token":              "KUBE_TOKEN",
		"password":           "KUBE_PASSWORD",
		"client_certificate": "KUBE_CLIENT_CERT_DATA",
		"client_key":         "KUBE_CLIENT_KEY_DATA",
	},
	"consul": {
		"access_token": "CONSUL_HTTP_TOKEN",
	},
	"azurerm": {
		"access_key":    "ARM_ACCESS_KEY",
		"sas_token":     "ARM_SAS_TOKEN",
		"client_secret": "ARM_CLIENT_SECRET",
	},
	"gcs": {
		"credentials":    "GOOGLE_BACKEND_CREDENTIALS",
		"access_token":   "GOOGLE_OAUTH_ACCESS_TOKEN",
		"encryption_key": "GOOGLE_ENCRYPTION_KEY",
	},
}

// SplitSecrets returns the secret settings (config) of a backend of type
// typ that go to the environment (as variables) and those left for a
// -backend-config file.
func SplitSecrets(typ string, config map[string]string) (env, file map[string]string) {
	vars := backendSecretEnv[typ]
	for k, v := range config {
		if name, ok := vars[k]; ok {
			if env == nil {
				env = map[string]string{}
			}
			env[name] = v
			continue
		}
		if file == nil {
			file = map[string]string{}
		}
		file[k] = v
	}
	return env, file
}

// WriteConfigFile writes settings as an HCL -backend-config file (mode
// 0600) under workDir/.secrets, outside every workspace, and returns its
// path and a cleanup that removes it. Only settings the backend cannot
// read from its environment come here (SplitSecrets): tofu records them
// in the workspace's .terraform/terraform.tfstate.
func WriteConfigFile(workDir, name string, settings map[string]string) (string, func(), error) {
	dir := filepath.Join(workDir, ".secrets")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("backend config: %w", err)
	}
	f := hclwrite.NewEmptyFile()
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if !hclsyntax.ValidIdentifier(k) {
			return "", nil, fmt.Errorf("backend config: %q is not a valid setting name", k)
		}
		f.Body().SetAttributeValue(k, cty.StringVal(settings[k]))
	}
	path := filepath.Join(dir, name+".tfbackend")
	if err := os.WriteFile(path, f.Bytes(), 0o600); err != nil {
		return "", nil, fmt.Errorf("backend config: %w", err)
	}
	return path, func() { _ = os.Remove(path) }, nil
}
