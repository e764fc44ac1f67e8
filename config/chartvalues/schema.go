package chartvalues

import (
	"bytes"
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The chart's values schema, checked by Load as helm checks it: a
// misspelt or misplaced key is the same error in tfccm render --values as
// in helm install. values.schema.json is a copy of the chart's
// (deploy/helm/tfccm/values.schema.json), kept equal by
// TestSchemaIsTheChartsUpToDate (go generate copies it).

//go:generate go test -run TestSchemaIsTheChartsUpToDate -update .

const schemaURL = "urn:tfccm:chart:values.schema.json"

//go:embed values.schema.json
var schemaJSON []byte

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
})

// checkSchema validates a values file (as JSON) against the chart's schema.
func checkSchema(valuesJSON []byte) error {
	sch, err := compiled()
	if err != nil {
		return fmt.Errorf("the chart's values schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(valuesJSON))
	if err != nil {
		return fmt.Errorf("values: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		// The first line names the schema; the rest name each key.
		_, each, _ := strings.Cut(err.Error(), "\n")
		return fmt.Errorf("values do not meet the chart's values.schema.json:\n%s", each)
	}
	return nil
}
