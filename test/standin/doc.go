// Package standin is a test-only Terraform provider that stands in for a
// real cloud's provider plugin which cannot be installed on the test
// machines.
//
// It serves a provider's schema as printed by `tofu providers schema -json`
// (schemas/*.json.gz, copied from the provider-schemas collection with the
// provider address and version recorded in schemas/README.md) over the
// plugin protocol (version 6, which OpenTofu speaks to any provider and which
// can express every schema construct, nested attributes included).
// OpenTofu itself checks configurations against that schema: unknown
// attributes, wrong types, missing required arguments and block nesting or
// min/max item counts are OpenTofu's own errors, exactly as with the real
// plugin. What OpenTofu leaves to the provider, the stand-in checks as the
// real provider does: a required argument whose value is null
// ("Missing required argument", when the plan reaches the resource, so
// before the preconditions of resources that depend on it), and the
// documented conflicts, exactly-one-of, at-least-one-of and value rules of
// the resources the built-in sets use, which `tofu providers schema -json`
// does not carry; a data source lookup the cloud's API refuses fails the
// read; what a cloud refuses only at apply fails the apply.
//
// Behaviour as far as OpenTofu can see:
//   - plan: computed attributes with no value are unknown ("known after
//     apply"); everything else is what the configuration says; no attribute
//     forces replacement (the schemas do not record that);
//   - apply: unknown values become deterministic, plausible values derived
//     from the resource type, attribute name and planned values: numeric ids
//     (OCIDs for oracle/oci), IPv4 addresses from 203.0.113.0/24 (private
//     ones, "private" in the name, from 10.0.0.0/8), IPv6 from
//     2001:db8::/32, hostnames under standin.example; a fixture file
//     (EnvFixture) overrides any attribute per resource type or per named
//     object; collections
//     are empty, except that a data source's computed list of objects (a
//     lookup's results) has one element;
//   - read returns what was applied (with EnvStore set, what the store holds:
//     an object removed from the store is gone, as after a deletion outside
//     Terraform); import by id returns the stored object (or just the id);
//   - every create, update and delete is appended to a JSON-lines call log
//     (EnvLog) with its values, so tests can assert what the cloud would
//     have been asked to do.
//
// Install writes the stand-in into a filesystem mirror under the real
// provider address and version and a CLI config that uses only that
// mirror, so templates keep their real required_providers blocks. It is a
// test tool and is never shipped.
package standin
