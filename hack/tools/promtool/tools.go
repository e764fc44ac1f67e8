//go:build tools

// Package tools pins Prometheus so `go build
// github.com/prometheus/prometheus/cmd/promtool` resolves from this module
// (promtool checks and unit-tests the chart's alerting rules).
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
