package config

import (
	_ "embed"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// presetsTOML holds per-environment hyperparameters, each with its source.
//
//go:embed presets.toml
var presetsTOML string

var (
	presetsOnce sync.Once
	presets     map[string]map[string]any
	presetsErr  error
)

// Preset returns the keys the preset of envID sets (nil when it has none).
// A table named by the exact ID wins; otherwise a table whose name is a
// pattern with '*' (path.Match syntax, such as "MinAtar/*-v1") applies to
// every ID it matches, the first in sorted order when several do.
func Preset(envID string) map[string]any {
	presetsOnce.Do(func() {
		_, presetsErr = toml.Decode(presetsTOML, &presets)
	})
	if presetsErr != nil {
		panic(fmt.Sprintf("config: embedded presets.toml: %v", presetsErr)) // part of the program
	}
	if p, ok := presets[envID]; ok {
		return p
	}
	for _, pattern := range PresetIDs() {
		if ok, _ := path.Match(pattern, envID); ok && strings.Contains(pattern, "*") {
			return presets[pattern]
		}
	}
	return nil
}

// PresetIDs lists the environments that have a preset (and the patterns
// of environments), sorted.
func PresetIDs() []string {
	presetsOnce.Do(func() {
		_, presetsErr = toml.Decode(presetsTOML, &presets)
	})
	ids := make([]string, 0, len(presets))
	for id := range presets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ForEnv returns the defaults with envID's preset applied: what a run on
// envID uses before any file or override.
func ForEnv(envID string) (Config, error) {
	c := Default()
	c.Env.ID = envID
	if err := c.applyTable(Preset(envID), "preset "+envID); err != nil {
		return c, err
	}
	return c, nil
}

// ResolveWith builds a config as defaults ← preset ← apply. apply (which
// loads files and overrides) runs twice: once to learn the env.id, whose
// preset goes underneath, then for real.
func ResolveWith(apply func(*Config) error) (Config, error) {
	probe := Default()
	if err := apply(&probe); err != nil {
		return probe, err
	}
	c, err := ForEnv(probe.Env.ID)
	if err != nil {
		return c, err
	}
	if err := apply(&c); err != nil {
		return c, err
	}
	return c, c.Validate()
}
