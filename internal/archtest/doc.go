// Package archtest holds no code but its test: the module's import rules,
// checked with `go list` over the whole module on every `make test`.
//
// The rules are the layering of ../shared/design/layout.md ("Which way
// imports go") and every "Must not import" sentence a package doc states. A
// package doc that states such a sentence without a row in the table fails
// the test, so a rule cannot be written without being checked. Each row says
// whether it reads the package's direct imports (what its own files import)
// or its whole dependency graph (what it links); both leave tests out.
//
// Must not import anything (it is a test-only package).
package archtest
