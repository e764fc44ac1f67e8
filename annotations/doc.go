// Package annotations declares every per-Service annotation tfccm reads, once
// and typed: its name, Go type, parser and documentation. Parsing errors name
// the annotation and say what was wrong, because they become Events on the
// Service. docs/annotations.md (and a table between markers in any README that
// has them) is generated from these declarations (go generate ./annotations,
// checked by TestDocsUpToDate).
package annotations

//go:generate go test -run TestDocsUpToDate -update .
