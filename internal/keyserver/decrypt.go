package keyserver

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// payload is OpenTofu's encrypted state or plan document (base.go of its
// internal/encryption): metadata by key provider, and AES-GCM's nonce
// followed by the sealed data.
type payload struct {
	Meta    map[string][]byte `json:"meta"`
	Data    []byte            `json:"encrypted_data"`
	Version string            `json:"encryption_version"`
}

// errNotOurs: the payload was not encrypted with a key this server holds.
var errNotOurs = errors.New("not encrypted with a key of this controller's tfccm_pbkdf2 key providers")

// Decrypt opens an OpenTofu payload written with one of the server's keys
// (aes_gcm without aad), so that the controller reads a state's outputs
// without starting tofu. Any other payload is an error: tofu reads it.
func (s *Server) Decrypt(doc []byte) ([]byte, error) {
	var p payload
	if err := json.Unmarshal(doc, &p); err != nil {
		return nil, fmt.Errorf("decode the encrypted document: %w", err)
	}
	if p.Version == "" || len(p.Data) == 0 {
		return nil, errors.New("not an encrypted document")
	}
	s.mu.Lock()
	ids := make([]string, 0, len(s.keys))
	for id := range s.keys {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for name, raw := range p.Meta {
		if !strings.HasPrefix(name, "key_provider.external.") {
			continue
		}
		var m providerMeta
		if err := json.Unmarshal(raw, &m); err != nil || m.ExternalData == nil || m.ExternalData.validate() != nil {
			continue
		}
		for _, id := range ids {
			s.mu.Lock()
			k := s.keys[id]
			s.mu.Unlock()
			key, err := s.derive(id, k, *m.ExternalData)
			if err != nil {
				continue
			}
			if plain, err := openGCM(key, p.Data); err == nil {
				return plain, nil
			}
		}
	}
	return nil, errNotOurs
}

func openGCM(key, data []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if len(data) < gcm.NonceSize() {
		return nil, errors.New("short ciphertext")
	}
	return gcm.Open(nil, data[:gcm.NonceSize()], data[gcm.NonceSize():], nil)
}

// DecryptState is Decrypt with the process's server; an error when it was
// never started (no tfccm_pbkdf2 key provider).
func DecryptState(doc []byte) ([]byte, error) {
	defaultMu.Lock()
	s := defaultServer
	defaultMu.Unlock()
	if s == nil {
		return nil, errNotOurs
	}
	return s.Decrypt(doc)
}
