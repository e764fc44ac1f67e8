// Package backends owns the state backend as the engine knows it beside
// tofu: a workspace's backend settings, tofu's backend record, the
// kubernetes backend's own objects and the catalog kept in the backend.
//
// A workspace's backend (Info) is its type and settings, and where the
// local backend keeps state; its secret settings reach tofu through the
// environment where the backend reads them from there, else through a
// -backend-config file outside the workspace. tofu's backend record
// (.terraform/terraform.tfstate) holds the settings init recorded and
// whether tofu adopted them; a record is made from another workspace's
// with this workspace's settings. The kubernetes backend's state Secret
// and lock Lease are read, removed and released here. The catalog keeps
// one entry per catalogued workspace in the backend itself (what an entry
// says is the engine's).
//
// It imports nothing of package workspace nor of package workspace/tofu:
// the catalog runs its commands through the Runner interface.
package backends
