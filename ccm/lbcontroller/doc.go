// Package lbcontroller is tfccm's load-balancer controller. It owns the
// lifecycle of every LoadBalancer Service tfccm serves: what the service
// controller asks of it and its own class loop for load_balancer_class,
// the re-renders when inputs change, the orphan sweep, the health loop,
// name holding, refusals, the Services' addresses, review mode (published
// plans and their approvals) and everything a Service's owner sees of it:
// one outcome table from engine states to conditions, Events, retries and
// phase texts, the condition writer, and the Event reasons published as
// docs/events.md.
package lbcontroller

//go:generate go test -run TestEventsDocUpToDate -update .
