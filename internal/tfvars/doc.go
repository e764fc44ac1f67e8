// Package tfvars writes tfccm's generated inputs file (tfccm.auto.tfvars):
// a header comment and one attribute per input, each a literal HCL value.
//
// Printer streams the file in one pass and produces exactly the bytes
// hclwrite would (Reference), formatting included, so the file is `tofu
// fmt` clean and reviewable. Values are only ever written as quoted,
// escaped literals: no Service field or annotation can become HCL syntax.
// The equivalence and injection fuzzers live beside the printer and in
// templates (render tests).
package tfvars
