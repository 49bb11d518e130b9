// Package hostile is the hostile-input suite: its tests build the real
// agenttrainer binary and replay attacks against it — bad command lines and
// configs, memory bombs, malformed task files, corrupt checkpoints, hostile
// control-socket clients and remote servers, broken filesystems, signals at
// random moments, SSH abuse — each in a subprocess with a bound on wall time
// and peak RSS, checking the expected outcome (exit code, message, files kept,
// no panic, no lost metrics rows). `go test ./internal/hostile` runs a fast
// subset; scripts/hostile.sh runs all of it and prints the table.
package hostile
