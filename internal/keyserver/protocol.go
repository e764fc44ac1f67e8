package keyserver

import "encoding/json"

// Marker is the first argument of the helper command: a binary that
// imports this package (every tfccm binary, and every test binary that
// loads a cloud config) answers OpenTofu's external key provider protocol
// when started with it, before anything else runs (see helper.go).
const Marker = "__tfccm-encryption-key"

// OpenTofu's external key provider protocol, version 1
// (internal/encryption/keyprovider/external in OpenTofu).
const (
	headerMagic   = "OpenTofu-External-Key-Provider"
	headerVersion = 1
)

type header struct {
	Magic   string `json:"magic"`
	Version int    `json:"version"`
}

// meta is what OpenTofu stores with each encrypted payload for this key
// provider ("external_data" of the external provider's metadata): the
// parameters of the derivation, no secret. The field names are those of
// OpenTofu's pbkdf2 metadata.
type meta struct {
	Salt         []byte `json:"salt"`
	Iterations   int    `json:"iterations"`
	HashFunction string `json:"hash_function"`
	KeyLength    int    `json:"key_length"`
}

type providerMeta struct {
	ExternalData *meta `json:"external_data,omitempty"`
}

type keys struct {
	EncryptionKey []byte `json:"encryption_key"`
	DecryptionKey []byte `json:"decryption_key,omitempty"`
}

type output struct {
	Keys keys         `json:"keys"`
	Meta providerMeta `json:"meta"`
}

// request is what the helper sends the server: the key id and tofu's
// input metadata as tofu wrote it ("null" when encrypting only).
type request struct {
	ID   string          `json:"id"`
	Meta json.RawMessage `json:"meta"`
}

// response is the server's answer: the helper's output to tofu, or an
// error (never holding a key or passphrase).
type response struct {
	Output *output `json:"output,omitempty"`
	Error  string  `json:"error,omitempty"`
}
