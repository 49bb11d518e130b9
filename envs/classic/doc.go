// Package classic holds the Gymnasium classic-control environments, with the libm replays that make them match Gymnasium bit for bit.
package classic
