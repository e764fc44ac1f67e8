package standin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Secrets the stand-in receives: write-only arguments and the provider
// configuration. The schemas in provider-schemas/ lost the write_only flag
// when they were reduced; the real providers name their write-only
// arguments *_wo (google's private_key_wo, bpg/proxmox's data_wo, ...),
// so the stand-in serves such an argument as write-only: OpenTofu then
// keeps its value out of plans and state, and the stand-in returns it null.
// What it received is logged as a sha256 fingerprint, never in clear: the
// call's WriteOnly, and one line per provider configuration in
// <call log>.configure.

// isWriteOnly reports whether the stand-in serves attribute name as
// write-only.
func isWriteOnly(name string, a *jsonAttribute) bool {
	return strings.HasSuffix(name, "_wo") && !a.Computed
}

// Fingerprint is how the stand-in logs a secret it received.
func Fingerprint(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// nullWriteOnly returns object v with b's write-only attributes null.
func nullWriteOnly(b *tfprotov6.SchemaBlock, v tftypes.Value) (tftypes.Value, error) {
	for _, a := range b.Attributes {
		if !a.WriteOnly || v.IsNull() || !v.IsKnown() {
			continue
		}
		var err error
		if v, err = withAttr(v, a.Name, tftypes.NewValue(a.ValueType(), nil)); err != nil {
			return v, err
		}
	}
	return v, nil
}

// stringFingerprints returns the fingerprints of object v's known, non-null
// string attributes that keep says to log.
func stringFingerprints(v tftypes.Value, keep func(name string) bool) map[string]string {
	var m map[string]tftypes.Value
	if v.IsNull() || !v.IsKnown() || v.As(&m) != nil {
		return nil
	}
	out := map[string]string{}
	for name, a := range m {
		var s string
		if !keep(name) || !a.Type().Is(tftypes.String) || !a.IsKnown() || a.IsNull() || a.As(&s) != nil {
			continue
		}
		out[name] = Fingerprint(s)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// writeOnlyFingerprints fingerprints the write-only arguments of config.
func writeOnlyFingerprints(b *tfprotov6.SchemaBlock, config tftypes.Value) map[string]string {
	wo := map[string]bool{}
	for _, a := range b.Attributes {
		wo[a.Name] = a.WriteOnly
	}
	return stringFingerprints(config, func(name string) bool { return wo[name] })
}

// logConfigure appends the fingerprints of a provider configuration's
// string attributes to <call log>.configure.
func (s *Server) logConfigure(config tftypes.Value) error {
	fp := stringFingerprints(config, func(string) bool { return true })
	if s.logPath == "" || fp == nil {
		return nil
	}
	line, err := json.Marshal(fp)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.logPath+".configure", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("configure log: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("configure log: %w", err)
	}
	return f.Close()
}
