package standin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Environment variables the stand-in reads when it starts (OpenTofu passes
// its own environment to provider plugins).
const (
	// EnvLog names the JSON-lines call log file (appended to).
	EnvLog = "TFCCM_STANDIN_LOG"
	// EnvFixture names a JSON file {"<resource type>": {"<attribute>": value}}
	// whose values replace invented ones at apply; "<resource type>#<name>"
	// entries apply to the one object whose name (or display_name) is <name>. Attributes inside nested
	// blocks are named by their path without element keys, e.g.
	// "forwarding_rule.certificate_id".
	EnvFixture = "TFCCM_STANDIN_FIXTURE"
	// EnvStore names a directory holding every applied object, which read
	// and import consult: the stand-in's "cloud".
	EnvStore = "TFCCM_STANDIN_STORE"
	// EnvOnly, when set, is a comma-separated list of resource and data
	// source type name prefixes: only matching types are served (others are
	// OpenTofu's "does not support resource type" errors). Tests of providers
	// with huge schemas (oci) use it to keep OpenTofu's schema work small.
	EnvOnly = "TFCCM_STANDIN_ONLY"
)

// Call is one line of the call log.
type Call struct {
	// Op is "create", "update" or "delete".
	Op string `json:"op"`
	// Type is the resource type, e.g. hcloud_load_balancer.
	Type string `json:"type"`
	// ID is the object's id attribute.
	ID string `json:"id"`
	// Values are the object's attributes after the call (create, update).
	Values map[string]any `json:"values,omitempty"`
	// Prior are the attributes before the call (update, delete).
	Prior map[string]any `json:"prior,omitempty"`
	// WriteOnly are the fingerprints (Fingerprint) of the write-only
	// arguments the call received (create, update).
	WriteOnly map[string]string `json:"write_only,omitempty"`
}

// Server is the stand-in's plugin-protocol server for one provider schema.
type Server struct {
	schema  *ProviderSchema
	logPath string
	store   string
	fixture map[string]map[string]json.RawMessage
	mu      sync.Mutex
	// cloud serializes cloudRules checks with the store writes they see.
	cloud sync.Mutex
}

var _ tfprotov6.ProviderServer = (*Server)(nil)

// NewServer returns a server for schema, configured from the environment
// (EnvLog, EnvFixture, EnvStore), after recording that environment
// (EnvEnviron).
func NewServer(schema *ProviderSchema) (*Server, error) {
	if err := recordEnviron(schema.Address); err != nil {
		return nil, err
	}
	if only := os.Getenv(EnvOnly); only != "" {
		schema = schema.Only(strings.Split(only, ","))
	}
	markDeprecated(schema)
	s := &Server{schema: schema, logPath: os.Getenv(EnvLog), store: os.Getenv(EnvStore)}
	if p := os.Getenv(EnvFixture); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("stand-in fixture: %w", err)
		}
		if err := json.Unmarshal(data, &s.fixture); err != nil {
			return nil, fmt.Errorf("stand-in fixture %s: %w", p, err)
		}
	}
	return s, nil
}

func errDiag(summary string, err error) []*tfprotov6.Diagnostic {
	return []*tfprotov6.Diagnostic{{Severity: tfprotov6.DiagnosticSeverityError, Summary: summary, Detail: err.Error()}}
}

func (s *Server) resource(name string) (*tfprotov6.Schema, error) {
	r, ok := s.schema.Resources[name]
	if !ok {
		return nil, fmt.Errorf("stand-in for %s has no resource type %q", s.schema.Address, name)
	}
	return r, nil
}

// GetMetadata lists the resource and data source types.
func (s *Server) GetMetadata(context.Context, *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	resp := &tfprotov6.GetMetadataResponse{ServerCapabilities: &tfprotov6.ServerCapabilities{GetProviderSchemaOptional: false}}
	for _, n := range sortedNames(s.schema.Resources) {
		resp.Resources = append(resp.Resources, tfprotov6.ResourceMetadata{TypeName: n})
	}
	for _, n := range sortedNames(s.schema.DataSources) {
		resp.DataSources = append(resp.DataSources, tfprotov6.DataSourceMetadata{TypeName: n})
	}
	return resp, nil
}

// GetProviderSchema serves the loaded schema.
func (s *Server) GetProviderSchema(context.Context, *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	return &tfprotov6.GetProviderSchemaResponse{
		Provider:          s.schema.Provider,
		ResourceSchemas:   s.schema.Resources,
		DataSourceSchemas: s.schema.DataSources,
		ServerCapabilities: &tfprotov6.ServerCapabilities{
			GetProviderSchemaOptional: false,
		},
	}, nil
}

// GetResourceIdentitySchemas: the stand-in declares no resource identities.
func (s *Server) GetResourceIdentitySchemas(context.Context, *tfprotov6.GetResourceIdentitySchemasRequest) (*tfprotov6.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov6.GetResourceIdentitySchemasResponse{}, nil
}

// ValidateProviderConfig accepts what OpenTofu's schema checks accepted.
func (s *Server) ValidateProviderConfig(_ context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	return &tfprotov6.ValidateProviderConfigResponse{PreparedConfig: req.Config}, nil
}

// ConfigureProvider needs no credentials; it logs the fingerprints of
// what it was given (writeonly.go).
func (s *Server) ConfigureProvider(_ context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	resp := &tfprotov6.ConfigureProviderResponse{}
	if req.Config == nil || s.schema.Provider == nil {
		return resp, nil
	}
	cfg, err := req.Config.Unmarshal(s.schema.Provider.ValueType())
	if err != nil {
		resp.Diagnostics = errDiag("Cannot decode provider config", err)
		return resp, nil
	}
	if err := s.logConfigure(cfg); err != nil {
		resp.Diagnostics = errDiag("Cannot write the stand-in configure log", err)
	}
	return resp, nil
}

// StopProvider has nothing in flight to stop.
func (s *Server) StopProvider(context.Context, *tfprotov6.StopProviderRequest) (*tfprotov6.StopProviderResponse, error) {
	return &tfprotov6.StopProviderResponse{}, nil
}

// ValidateResourceConfig checks what the real provider checks and
// OpenTofu does not (rules.go): required arguments with null values and the
// documented rules of resourceRules.
func (s *Server) ValidateResourceConfig(_ context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	r, err := s.resource(req.TypeName)
	if err != nil {
		return &tfprotov6.ValidateResourceConfigResponse{Diagnostics: errDiag("Unknown resource type", err)}, nil
	}
	cfg, err := req.Config.Unmarshal(r.ValueType())
	if err != nil {
		return &tfprotov6.ValidateResourceConfigResponse{Diagnostics: errDiag("Cannot decode config", err)}, nil
	}
	return &tfprotov6.ValidateResourceConfigResponse{Diagnostics: validateConfig(r.Block, resourceRules[req.TypeName], cfg)}, nil
}

// UpgradeResourceState decodes stored JSON state with the current schema.
func (s *Server) UpgradeResourceState(_ context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	r, err := s.resource(req.TypeName)
	if err != nil {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errDiag("Unknown resource type", err)}, nil
	}
	t := r.ValueType()
	v, err := req.RawState.UnmarshalWithOpts(t, tfprotov6.UnmarshalOpts{ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true}})
	if err != nil {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errDiag("Cannot decode state", err)}, nil
	}
	dv, err := tfprotov6.NewDynamicValue(t, v)
	if err != nil {
		return &tfprotov6.UpgradeResourceStateResponse{Diagnostics: errDiag("Cannot encode state", err)}, nil
	}
	return &tfprotov6.UpgradeResourceStateResponse{UpgradedState: &dv}, nil
}

// UpgradeResourceIdentity: no identities.
func (s *Server) UpgradeResourceIdentity(context.Context, *tfprotov6.UpgradeResourceIdentityRequest) (*tfprotov6.UpgradeResourceIdentityResponse, error) {
	return &tfprotov6.UpgradeResourceIdentityResponse{}, nil
}

// ReadResource returns what was applied: the stored object when a store is
// configured (null when it is gone from the store), else the prior state.
func (s *Server) ReadResource(_ context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp := &tfprotov6.ReadResourceResponse{NewState: req.CurrentState, Private: req.Private}
	if s.store == "" || req.CurrentState == nil {
		return resp, nil
	}
	r, err := s.resource(req.TypeName)
	if err != nil {
		resp.Diagnostics = errDiag("Unknown resource type", err)
		return resp, nil
	}
	cur, err := req.CurrentState.Unmarshal(r.ValueType())
	if err != nil {
		resp.Diagnostics = errDiag("Cannot decode state", err)
		return resp, nil
	}
	id := stringAttr(cur, "id")
	if id == "" {
		return resp, nil
	}
	stored, err := s.load(req.TypeName, id)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		null, _ := tfprotov6.NewDynamicValue(r.ValueType(), tftypes.NewValue(r.ValueType(), nil))
		resp.NewState = &null
	case err != nil:
		resp.Diagnostics = errDiag("Cannot read the stand-in store", err)
	default:
		resp.NewState = stored
	}
	return resp, nil
}

// PlanResourceChange plans the proposed state with computed attributes
// that have no value unknown.
func (s *Server) PlanResourceChange(_ context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp := &tfprotov6.PlanResourceChangeResponse{PlannedState: req.ProposedNewState, PlannedPrivate: req.PriorPrivate}
	r, err := s.resource(req.TypeName)
	if err != nil {
		resp.Diagnostics = errDiag("Unknown resource type", err)
		return resp, nil
	}
	t := r.ValueType()
	proposed, err := req.ProposedNewState.Unmarshal(t)
	if err != nil {
		resp.Diagnostics = errDiag("Cannot decode proposed state", err)
		return resp, nil
	}
	if proposed.IsNull() {
		return resp, nil // destroy
	}
	planned, err := markComputedUnknown(r.Block, proposed)
	if err == nil {
		planned, err = nullWriteOnly(r.Block, planned)
	}
	if err != nil {
		resp.Diagnostics = errDiag("Cannot plan", err)
		return resp, nil
	}
	dv, err := tfprotov6.NewDynamicValue(t, planned)
	if err != nil {
		resp.Diagnostics = errDiag("Cannot encode planned state", err)
		return resp, nil
	}
	resp.PlannedState = &dv
	return resp, nil
}

// ApplyResourceChange invents the unknown values, stores the object and
// logs the call.
func (s *Server) ApplyResourceChange(_ context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp := &tfprotov6.ApplyResourceChangeResponse{Private: req.PlannedPrivate}
	r, err := s.resource(req.TypeName)
	if err != nil {
		resp.Diagnostics = errDiag("Unknown resource type", err)
		return resp, nil
	}
	t := r.ValueType()
	prior, err := req.PriorState.Unmarshal(t)
	if err != nil {
		resp.Diagnostics = errDiag("Cannot decode prior state", err)
		return resp, nil
	}
	planned, err := req.PlannedState.Unmarshal(t)
	if err != nil {
		resp.Diagnostics = errDiag("Cannot decode planned state", err)
		return resp, nil
	}
	if planned.IsNull() {
		id := stringAttr(prior, "id")
		if err := s.remove(req.TypeName, id); err != nil {
			resp.Diagnostics = errDiag("Cannot update the stand-in store", err)
			resp.NewState = req.PriorState
			return resp, nil
		}
		if err := s.log(Call{Op: "delete", Type: req.TypeName, ID: id, Prior: objectJSON(prior)}); err != nil {
			resp.Diagnostics = errDiag("Cannot write the stand-in call log", err)
		}
		resp.NewState = req.PlannedState
		return resp, nil
	}
	seed, _ := json.Marshal(toJSON(planned))
	g := &generator{address: s.schema.Address, typeName: req.TypeName, seed: seed, fixture: s.fixtureFor(req.TypeName, planned)}
	if prior.IsNull() {
		// A new object: the seed should not depend on computed values,
		// and the id should be invented even if the plan left it null.
		if stringAttr(planned, "id") == "" && hasAttr(r.Block, "id") {
			if planned, err = withAttr(planned, "id", tftypes.NewValue(attrType(r.Block, "id"), tftypes.UnknownValue)); err != nil {
				resp.Diagnostics = errDiag("Cannot apply", err)
				return resp, nil
			}
		}
	}
	applied, err := g.fill(planned)
	if err == nil {
		applied, err = nullWriteOnly(r.Block, applied)
	}
	if err != nil {
		resp.Diagnostics = errDiag("Cannot apply", err)
		return resp, nil
	}
	dv, err := tfprotov6.NewDynamicValue(t, applied)
	if err != nil {
		resp.Diagnostics = errDiag("Cannot encode new state", err)
		return resp, nil
	}
	id := stringAttr(applied, "id")
	// What the cloud refuses at apply (cloudrules.go): checked and stored
	// under one lock, as OpenTofu applies independent objects in parallel.
	s.cloud.Lock()
	if rule := cloudRules[req.TypeName]; rule != nil {
		if err := rule(s, id, applied); err != nil {
			s.cloud.Unlock()
			resp.Diagnostics = errDiag("Error creating "+req.TypeName, err)
			resp.NewState = req.PriorState
			return resp, nil
		}
	}
	err = s.save(req.TypeName, id, dv)
	s.cloud.Unlock()
	if err != nil {
		resp.Diagnostics = errDiag("Cannot update the stand-in store", err)
		return resp, nil
	}
	resp.NewState = &dv
	call := Call{Op: "create", Type: req.TypeName, ID: id, Values: objectJSON(applied)}
	if cfg, err := req.Config.Unmarshal(t); err == nil {
		call.WriteOnly = writeOnlyFingerprints(r.Block, cfg)
	}
	if !prior.IsNull() {
		call.Op = "update"
		call.Prior = objectJSON(prior)
	}
	if err := s.log(call); err != nil {
		resp.Diagnostics = errDiag("Cannot write the stand-in call log", err)
	}
	return resp, nil
}

// fixtureFor merges the fixture of a resource type with that of the one
// object named by its name or display_name attribute ("<type>#<name>").
func (s *Server) fixtureFor(typeName string, v tftypes.Value) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, raw := range s.fixture[typeName] {
		out[k] = raw
	}
	name := stringAttr(v, "name")
	if name == "" {
		name = stringAttr(v, "display_name")
	}
	if name != "" {
		for k, raw := range s.fixture[typeName+"#"+name] {
			out[k] = raw
		}
	}
	return out
}

func hasAttr(b *tfprotov6.SchemaBlock, name string) bool { return attrType(b, name) != nil }

func attrType(b *tfprotov6.SchemaBlock, name string) tftypes.Type {
	for _, a := range b.Attributes {
		if a.Name == name {
			return a.ValueType()
		}
	}
	return nil
}

func objectJSON(v tftypes.Value) map[string]any {
	m, _ := toJSON(v).(map[string]any)
	return m
}

// ImportResourceState imports an object by its import id: the stored
// object the provider's documented import id names (importObject) when a
// store holds it, else an object with only its id set (read fills in).
func (s *Server) ImportResourceState(_ context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	resp := &tfprotov6.ImportResourceStateResponse{}
	r, err := s.resource(req.TypeName)
	if err != nil {
		resp.Diagnostics = errDiag("Unknown resource type", err)
		return resp, nil
	}
	t := r.ValueType()
	var state *tfprotov6.DynamicValue
	if s.store != "" {
		stored, err := s.importObject(req.TypeName, req.ID, t)
		if err != nil {
			resp.Diagnostics = errDiag("Cannot import "+req.TypeName, fmt.Errorf("no object with id %q: %w", req.ID, err))
			return resp, nil
		}
		state = stored
	} else {
		obj := map[string]tftypes.Value{}
		for name, at := range t.(tftypes.Object).AttributeTypes {
			obj[name] = tftypes.NewValue(at, nil)
		}
		idType := attrType(r.Block, "id")
		if idType == nil {
			resp.Diagnostics = errDiag("Cannot import "+req.TypeName, errors.New("the resource type has no id attribute"))
			return resp, nil
		}
		idv, err := tftypes.ValueFromJSON(mustJSON(req.ID, idType), idType) //nolint:staticcheck // plain JSON
		if err != nil {
			resp.Diagnostics = errDiag("Cannot import "+req.TypeName, err)
			return resp, nil
		}
		obj["id"] = idv
		dv, err := tfprotov6.NewDynamicValue(t, tftypes.NewValue(t, obj))
		if err != nil {
			resp.Diagnostics = errDiag("Cannot encode imported state", err)
			return resp, nil
		}
		state = &dv
	}
	resp.ImportedResources = []*tfprotov6.ImportedResource{{TypeName: req.TypeName, State: state}}
	return resp, nil
}

func mustJSON(id string, t tftypes.Type) []byte {
	if t.Is(tftypes.Number) {
		return []byte(id)
	}
	b, _ := json.Marshal(id)
	return b
}

// MoveResourceState is not supported.
func (s *Server) MoveResourceState(context.Context, *tfprotov6.MoveResourceStateRequest) (*tfprotov6.MoveResourceStateResponse, error) {
	return &tfprotov6.MoveResourceStateResponse{Diagnostics: errDiag("Not supported", errors.New("the stand-in cannot move resource state"))}, nil
}

// ValidateDataResourceConfig checks required arguments with null values,
// as the real provider does.
func (s *Server) ValidateDataResourceConfig(_ context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	d, ok := s.schema.DataSources[req.TypeName]
	if !ok {
		return &tfprotov6.ValidateDataResourceConfigResponse{Diagnostics: errDiag("Unknown data source", fmt.Errorf("stand-in for %s has no data source %q", s.schema.Address, req.TypeName))}, nil
	}
	cfg, err := req.Config.Unmarshal(d.ValueType())
	if err != nil {
		return &tfprotov6.ValidateDataResourceConfigResponse{Diagnostics: errDiag("Cannot decode config", err)}, nil
	}
	return &tfprotov6.ValidateDataResourceConfigResponse{Diagnostics: validateConfig(d.Block, nil, cfg)}, nil
}

// ReadDataSource returns the configuration with invented computed values;
// a computed list of objects (a lookup's results) has one element.
func (s *Server) ReadDataSource(_ context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	resp := &tfprotov6.ReadDataSourceResponse{}
	d, ok := s.schema.DataSources[req.TypeName]
	if !ok {
		resp.Diagnostics = errDiag("Unknown data source", fmt.Errorf("stand-in for %s has no data source %q", s.schema.Address, req.TypeName))
		return resp, nil
	}
	t := d.ValueType()
	cfg, err := req.Config.Unmarshal(t)
	if err != nil {
		resp.Diagnostics = errDiag("Cannot decode data source config", err)
		return resp, nil
	}
	// What the cloud's API refuses for this lookup (rules.go).
	for _, r := range lookupRules[req.TypeName] {
		if diags := r.check(d.Block, cfg); len(diags) > 0 {
			for _, dg := range diags {
				dg.Summary = "Error reading " + req.TypeName
			}
			resp.Diagnostics = diags
			return resp, nil
		}
	}
	v, err := markComputedUnknown(d.Block, cfg)
	if err == nil {
		seed, _ := json.Marshal(toJSON(cfg))
		g := &generator{address: s.schema.Address, typeName: req.TypeName, seed: seed, fixture: s.fixture[req.TypeName], lookup: true}
		v, err = g.fill(v)
	}
	if err != nil {
		resp.Diagnostics = errDiag("Cannot read data source", err)
		return resp, nil
	}
	dv, err := tfprotov6.NewDynamicValue(t, v)
	if err != nil {
		resp.Diagnostics = errDiag("Cannot encode data source", err)
		return resp, nil
	}
	resp.State = &dv
	return resp, nil
}

// CallFunction: the stand-in offers no provider functions.
func (s *Server) CallFunction(context.Context, *tfprotov6.CallFunctionRequest) (*tfprotov6.CallFunctionResponse, error) {
	return &tfprotov6.CallFunctionResponse{Error: &tfprotov6.FunctionError{Text: "the stand-in offers no functions"}}, nil
}

// GetFunctions: none.
func (s *Server) GetFunctions(context.Context, *tfprotov6.GetFunctionsRequest) (*tfprotov6.GetFunctionsResponse, error) {
	return &tfprotov6.GetFunctionsResponse{}, nil
}

// ValidateEphemeralResourceConfig: no ephemeral resources.
func (s *Server) ValidateEphemeralResourceConfig(context.Context, *tfprotov6.ValidateEphemeralResourceConfigRequest) (*tfprotov6.ValidateEphemeralResourceConfigResponse, error) {
	return &tfprotov6.ValidateEphemeralResourceConfigResponse{}, nil
}

// OpenEphemeralResource: no ephemeral resources.
func (s *Server) OpenEphemeralResource(context.Context, *tfprotov6.OpenEphemeralResourceRequest) (*tfprotov6.OpenEphemeralResourceResponse, error) {
	return &tfprotov6.OpenEphemeralResourceResponse{Diagnostics: errDiag("Not supported", errors.New("the stand-in has no ephemeral resources"))}, nil
}

// RenewEphemeralResource: no ephemeral resources.
func (s *Server) RenewEphemeralResource(context.Context, *tfprotov6.RenewEphemeralResourceRequest) (*tfprotov6.RenewEphemeralResourceResponse, error) {
	return &tfprotov6.RenewEphemeralResourceResponse{}, nil
}

// CloseEphemeralResource: no ephemeral resources.
func (s *Server) CloseEphemeralResource(context.Context, *tfprotov6.CloseEphemeralResourceRequest) (*tfprotov6.CloseEphemeralResourceResponse, error) {
	return &tfprotov6.CloseEphemeralResourceResponse{}, nil
}

// log appends one call to the call log.
func (s *Server) log(c Call) error {
	if s.logPath == "" {
		return nil
	}
	line, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("call log: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("call log: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("call log: %w", err)
	}
	return f.Close()
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func (s *Server) objectPath(typeName, id string) string {
	return filepath.Join(s.store, typeName, unsafeID.ReplaceAllString(id, "_")+".msgpack")
}

func (s *Server) save(typeName, id string, dv tfprotov6.DynamicValue) error {
	if s.store == "" || id == "" {
		return nil
	}
	p := s.objectPath(typeName, id)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("store %s %s: %w", typeName, id, err)
	}
	if err := os.WriteFile(p, dv.MsgPack, 0o644); err != nil {
		return fmt.Errorf("store %s %s: %w", typeName, id, err)
	}
	return nil
}

func (s *Server) load(typeName, id string) (*tfprotov6.DynamicValue, error) {
	data, err := os.ReadFile(s.objectPath(typeName, id))
	if err != nil {
		return nil, fmt.Errorf("store %s %s: %w", typeName, id, err)
	}
	return &tfprotov6.DynamicValue{MsgPack: data}, nil
}

func (s *Server) remove(typeName, id string) error {
	if s.store == "" || id == "" {
		return nil
	}
	if err := os.Remove(s.objectPath(typeName, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store %s %s: %w", typeName, id, err)
	}
	return nil
}

// ReadCalls reads a call log written by the stand-in; a missing file is an
// empty log.
func ReadCalls(path string) ([]Call, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read call log: %w", err)
	}
	var out []Call
	dec := json.NewDecoder(bytesReader(data))
	dec.UseNumber()
	for dec.More() {
		var c Call
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("read call log %s: %w", path, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// SortCalls orders calls by type, op and id: a stable form for assertions
// (OpenTofu applies independent resources in parallel).
func SortCalls(calls []Call) {
	sort.SliceStable(calls, func(i, j int) bool {
		a, b := calls[i], calls[j]
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		return a.ID < b.ID
	})
}

// GenerateResourceConfig returns the state as configuration.
func (s *Server) GenerateResourceConfig(_ context.Context, req *tfprotov6.GenerateResourceConfigRequest) (*tfprotov6.GenerateResourceConfigResponse, error) {
	return &tfprotov6.GenerateResourceConfigResponse{Config: req.State}, nil
}
