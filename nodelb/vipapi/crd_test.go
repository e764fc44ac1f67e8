package vipapi

import (
	"reflect"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// TestCRDMatchesTypes: the chart's NodeVIP CRD declares exactly the Go
// types' spec and status fields, under the types' names.
func TestCRDMatchesTypes(t *testing.T) {
	testkit.CheckCRD(t, testkit.CRD{
		File:  "../../deploy/helm/tfccm/crds/tfccm.io_nodevips.yaml",
		Group: Group, Kind: Kind, Resource: Resource, Version: Version,
		Spec: reflect.TypeFor[NodeVIPSpec](), Status: reflect.TypeFor[NodeVIPStatus](),
	})
}
