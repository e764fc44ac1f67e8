// Package backends owns what the engine reads and writes of tofu's
// backend record (.terraform/terraform.tfstate): the settings init
// recorded, whether tofu adopted a record, and a record made from another
// workspace's with this workspace's settings. It imports nothing of
// package workspace.
package backends
