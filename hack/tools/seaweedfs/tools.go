//go:build tools

// Package tools pins SeaweedFS so `go build github.com/seaweedfs/seaweedfs/weed`
// resolves from this module: a real S3-compatible server for the s3 state
// backend's tests.
package tools

import _ "github.com/seaweedfs/seaweedfs/weed"
