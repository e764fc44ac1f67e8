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

// TestNodeBGPCRDMatchesTypes: the same for NodeBGP.
func TestNodeBGPCRDMatchesTypes(t *testing.T) {
	testkit.CheckCRD(t, testkit.CRD{
		File:  "../../deploy/helm/tfccm/crds/tfccm.io_nodebgps.yaml",
		Group: Group, Kind: BGPKind, Resource: BGPResource, Version: Version,
		Spec: reflect.TypeFor[NodeBGPSpec](), Status: reflect.TypeFor[NodeBGPStatus](),
	})
}
