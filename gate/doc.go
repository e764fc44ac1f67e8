// Package gate owns the one judgement a plan passes before it is applied:
// the cloud config's policy rules (gate/policy), then its change windows
// (gate/window). The workspace engine calls it before every apply (the
// controller adapts it to plans.Gate) and the fleet plan for every
// row, so `tfccm plan` reports what the live gate would say, a closed
// window included.
package gate
