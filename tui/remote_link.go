package tui

import "github.com/agenttrainer/agenttrainer/trainer/control"

var _ Trainer = (*control.Client)(nil)
