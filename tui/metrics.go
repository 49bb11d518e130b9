package tui

import (
	"math"

	"github.com/agenttrainer/agenttrainer/trainer"
)

// This file is everything the app knows of the metrics a run reports: which
// there are, how a record's fields map to them, which the grid, the figures
// panel and the sparklines show. Every list of metrics in the app iterates
// over metricDefs, so that moving to the trainer's metric registry is a
// change here alone.

// channel names one metric kept in a history.
type channel int

const (
	chReturn    channel = iota // ep_return_mean
	chReturnMin                // ep_return_min (the band's floor)
	chReturnMax                // ep_return_max (the band's ceiling)
	chLength
	chPolicyLoss
	chValueLoss
	chEntropy
	chApproxKL
	chClipFrac
	chExplVar
	chSPS
	chEpisodes
	chLR
	chGradNorm
	chRolloutS
	chUpdateS
	chTime
	chValReturn  // val_return_mean (validation records only)
	chValSuccess // val_success_rate (validation records only)
	numChannels
)

// metricDef is one scalar of metrics.jsonl that can be charted.
type metricDef struct {
	name  string  // as in metrics.jsonl
	ch    channel // where a history keeps it
	grid  bool    // one of the grid's small charts
	label string  // its line in the figures panel and under one run's chart ("" none)
	spark bool    // that line has a sparkline
	val   bool    // validation records only: offered when a run has it
	value func(*trainer.Metrics) float64
}

func f64(v trainer.Float) float64 { return float64(v) }

func optFloat(f *trainer.Float) float64 {
	if f == nil {
		return math.NaN()
	}
	return float64(*f)
}

// metricDefs lists every scalar of trainer.Metrics the app charts, in the
// metric picker's order.
var metricDefs = []metricDef{
	{name: "ep_return_mean", ch: chReturn, grid: true, label: "return", spark: true, value: func(m *trainer.Metrics) float64 { return f64(m.EpReturnMean) }},
	{name: "ep_return_min", ch: chReturnMin, value: func(m *trainer.Metrics) float64 { return f64(m.EpReturnMin) }},
	{name: "ep_return_max", ch: chReturnMax, value: func(m *trainer.Metrics) float64 { return f64(m.EpReturnMax) }},
	{name: "ep_length_mean", ch: chLength, grid: true, label: "ep length", spark: true, value: func(m *trainer.Metrics) float64 { return f64(m.EpLengthMean) }},
	{name: "policy_loss", ch: chPolicyLoss, grid: true, label: "policy loss", spark: true, value: func(m *trainer.Metrics) float64 { return f64(m.PolicyLoss) }},
	{name: "value_loss", ch: chValueLoss, grid: true, label: "value loss", spark: true, value: func(m *trainer.Metrics) float64 { return f64(m.ValueLoss) }},
	{name: "entropy", ch: chEntropy, grid: true, label: "entropy", spark: true, value: func(m *trainer.Metrics) float64 { return f64(m.Entropy) }},
	{name: "approx_kl", ch: chApproxKL, grid: true, label: "approx_kl", spark: true, value: func(m *trainer.Metrics) float64 { return f64(m.ApproxKL) }},
	{name: "clipfrac", ch: chClipFrac, grid: true, label: "clipfrac", spark: true, value: func(m *trainer.Metrics) float64 { return f64(m.ClipFrac) }},
	{name: "explained_variance", ch: chExplVar, grid: true, label: "explained var", spark: true, value: func(m *trainer.Metrics) float64 { return f64(m.ExplainedVariance) }},
	{name: "lr", ch: chLR, grid: true, label: "learning rate", value: func(m *trainer.Metrics) float64 { return f64(m.LR) }},
	{name: "sps", ch: chSPS, grid: true, value: func(m *trainer.Metrics) float64 { return f64(m.SPS) }},
	{name: "grad_norm", ch: chGradNorm, value: func(m *trainer.Metrics) float64 { return f64(m.GradNorm) }},
	{name: "episodes", ch: chEpisodes, value: func(m *trainer.Metrics) float64 { return float64(m.Episodes) }},
	{name: "rollout_s", ch: chRolloutS, value: func(m *trainer.Metrics) float64 { return f64(m.RolloutS) }},
	{name: "update_s", ch: chUpdateS, value: func(m *trainer.Metrics) float64 { return f64(m.UpdateS) }},
	{name: "time_s", ch: chTime, value: func(m *trainer.Metrics) float64 { return f64(m.TimeS) }},
	{name: "val_return_mean", ch: chValReturn, grid: true, label: "val return", spark: true, val: true, value: func(m *trainer.Metrics) float64 { return optFloat(m.ValReturnMean) }},
	{name: "val_success_rate", ch: chValSuccess, grid: true, val: true, value: func(m *trainer.Metrics) float64 { return optFloat(m.ValSuccessRate) }},
}

// metricByName finds a metric's definition.
func metricByName(name string) (metricDef, bool) {
	for _, d := range metricDefs {
		if d.name == name {
			return d, true
		}
	}
	return metricDef{}, false
}

// metricOf is the definition of channel c.
func metricOf(c channel) metricDef {
	for _, d := range metricDefs {
		if d.ch == c {
			return d
		}
	}
	return metricDef{}
}

// valuesOf spreads a record over the channels.
func valuesOf(m *trainer.Metrics) [numChannels]float64 {
	var out [numChannels]float64
	for _, d := range metricDefs {
		out[d.ch] = d.value(m)
	}
	return out
}

// offered reports whether d is offered for runs that have has: val_*
// metrics only when a run has them.
func (d metricDef) offered(has func(channel) bool) bool { return !d.val || has(d.ch) }
