//go:build tools

// Package tools pins OpenTofu so `go build github.com/opentofu/opentofu/cmd/tofu`
// resolves from this module.
package tools

import _ "github.com/opentofu/opentofu/cmd/tofu"
