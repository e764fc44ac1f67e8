package workspace

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

// splitBackendSecrets returns the spec's secret backend settings that go
// to the environment (as variables) and those left for a -backend-config
// file.
func splitBackendSecrets(spec *Spec) (env, file map[string]string) {
	vars := backendSecretEnv[spec.Backend.Type]
	for k, v := range spec.BackendConfig {
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
