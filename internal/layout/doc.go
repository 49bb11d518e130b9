// Package layout holds the test that keeps the import rules of
// ARCHITECTURE.md: which packages may import which.
package layout
