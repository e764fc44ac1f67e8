// Package docs holds tfccm's documentation (the Markdown pages in this
// directory) and the tests that keep it true. Every fenced shell block of
// README.md and docs/*.md is marked as run or skipped (with a reason), the
// runnable ones are run against the tools `make test` builds, every
// relative link resolves to a file and, for Markdown targets, a heading,
// every default a page states for a cloud config setting
// ("`terraform.timeout` (10m)") is the one the generated reference,
// configuration.md, declares, and development.md's layout is the one the
// packages and their declared layer order generate.
//
// It also owns the layer order of tfccm's packages (Layers): which package
// may import which, held against every import by TestLayerOrder.
//
// Markers are HTML comments on the line before a fence:
//
//	<!-- docs-test: run -->                  run this block (bash -euo pipefail)
//	<!-- docs-test: skip: needs a cluster --> do not run it; the reason is required
//	<!-- docs-test: file cloud.hcl -->       write this block to cloud.hcl first
//
// The blocks of one page run in order in one scratch directory that links
// every top-level entry of the repository (bin/, deploy/, templates/, ...)
// and has a freshly built tfccm and the repository's bin/ on PATH.
package docs

//go:generate go test -run TestLayoutUpToDate -update .
